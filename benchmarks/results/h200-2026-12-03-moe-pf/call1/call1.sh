set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=.:/tmp/site
(nvidia-smi -L; date -u) > $OUT/0_env.txt 2>&1
timeout 150 python3 benchmarks/bench_moe.py devrun/moe_main.py devrun/moe_m32.py --reps 20 --baseline-reps 1 > $OUT/bench_moe_1.txt 2>&1
timeout 60 python3 benchmarks/check_moe_file.py devrun/moe_m32.py > $OUT/check_m32.txt 2>&1
timeout 240 python3 benchmarks/sweep_moe.py --reps 7 --shapes 3,5,2,1,4,6 --variants cur,m32,m32n64,m32g64,m32d64,m32t1600 --out $OUT > $OUT/sweep.txt 2>&1
timeout 100 python3 benchmarks/bench_moe.py devrun/moe_m32.py devrun/moe_main.py --reps 20 --baseline-reps 1 > $OUT/bench_moe_2.txt 2>&1
date -u >> $OUT/0_env.txt
