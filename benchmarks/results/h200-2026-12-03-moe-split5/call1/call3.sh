set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=.:/tmp/site
(nvidia-smi -L; date -u) > $OUT/0_env.txt 2>&1
timeout 200 python3 benchmarks/bench_moe.py devrun/moe_main.py devrun/moe_t1000.py --reps 20 --baseline-reps 1 > $OUT/bench_moe_1.txt 2>&1
timeout 60 python3 benchmarks/check_moe_file.py devrun/moe_t1000.py > $OUT/check_t1000.txt 2>&1
timeout 120 python3 benchmarks/sweep_moe.py --reps 7 --shapes 5 --variants cur,cur_t1200,cur_t1700 --out $OUT > $OUT/sweep5.txt 2>&1
timeout 150 python3 benchmarks/bench_moe.py devrun/moe_t1000.py devrun/moe_main.py --reps 20 --baseline-reps 1 > $OUT/bench_moe_2.txt 2>&1
date -u >> $OUT/0_env.txt
