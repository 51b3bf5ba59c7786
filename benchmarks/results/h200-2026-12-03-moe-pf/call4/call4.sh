set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=.:/tmp/site
(nvidia-smi -L; date -u) > $OUT/0_env.txt 2>&1
timeout 150 python3 benchmarks/bench_moe.py devrun/moe_new.py devrun/moe_old.py --reps 20 --baseline-reps 1 > $OUT/bench_moe_2.txt 2>&1
timeout 200 python3 -m submitgen test devrun/moe_new.py --shapes all > $OUT/test_new.txt 2>&1; echo "rc $?" >> $OUT/test_new.txt
timeout 60 python3 benchmarks/check_moe_file.py devrun/moe_new.py > $OUT/check_new.txt 2>&1
timeout 200 python3 benchmarks/sweep_moe.py --reps 7 --shapes 3,2,5,1,4 --variants curpf,pfd256,pfd128w8,pfd128k64 --out $OUT > $OUT/sweep.txt 2>&1
date -u >> $OUT/0_env.txt
