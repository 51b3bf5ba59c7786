set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=.:/tmp/site
(nvidia-smi -L; date -u) > $OUT/0_env.txt 2>&1
timeout 200 python3 benchmarks/sweep_moe.py --reps 7 --shapes 6,7,5,3,1 --variants pair128gupf,b128gupf,b128gupfs4,b128gupfd --out $OUT > $OUT/sweep.txt 2>&1
timeout 200 python3 benchmarks/bench_moe.py devrun/moe_main.py devrun/moe_gu.py devrun/moe_pf.py devrun/moe_b128.py --reps 20 --baseline-reps 1 > $OUT/bench_moe_1.txt 2>&1
timeout 60 python3 benchmarks/check_moe_file.py devrun/moe_gu.py > $OUT/check_gu.txt 2>&1
timeout 60 python3 benchmarks/check_moe_file.py devrun/moe_b128.py > $OUT/check_b128.txt 2>&1
date -u >> $OUT/0_env.txt
