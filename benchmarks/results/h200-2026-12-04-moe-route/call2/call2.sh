set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site devrun/whl/*.whl
export PYTHONPATH=.:/tmp/site
(nvidia-smi -L; date -u) > $OUT/0_env.txt 2>&1
timeout 150 python3 benchmarks/bench_moe.py devrun/moe_rt.py devrun/moe_cur.py --reps 20 --baseline-reps 1 > $OUT/bench_moe.txt 2>&1
timeout 60 python3 benchmarks/check_moe_file.py devrun/moe_rt.py > $OUT/check_rt.txt 2>&1
timeout 200 python3 -m submitgen test devrun/moe_rt.py --shapes all > $OUT/test_rt.txt 2>&1; echo "rc $?" >> $OUT/test_rt.txt
timeout 200 python3 benchmarks/sweep_moe.py --reps 7 --shapes 3,2,5,1,4 --variants shipped,curpf,pfdk256,pfdn64k256,pfdn64k256s1 --out $OUT > $OUT/sweep.txt 2>&1
date -u >> $OUT/0_env.txt
