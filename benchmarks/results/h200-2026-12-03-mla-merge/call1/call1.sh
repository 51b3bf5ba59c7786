set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=.:/tmp/site
(nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm --format=csv; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; date -u) > $OUT/0_env.txt 2>&1
B="python3 -m submitgen bench --shapes benchmark --iters 20"
timeout 170 $B devrun/mla_main.py > $OUT/bench_main_1.txt 2>&1
timeout 170 $B devrun/mla_merge.py > $OUT/bench_merge_1.txt 2>&1
timeout 120 python3 -m submitgen test devrun/mla_merge.py --shapes all > $OUT/test_merge.txt 2>&1; echo "rc $?" >> $OUT/test_merge.txt
timeout 170 $B devrun/mla_merge32.py > $OUT/bench_merge32.txt 2>&1
timeout 170 $B devrun/mla_merge128.py > $OUT/bench_merge128.txt 2>&1
timeout 170 $B devrun/mla_merge.py > $OUT/bench_merge_2.txt 2>&1
timeout 170 $B devrun/mla_main.py > $OUT/bench_main_2.txt 2>&1
timeout 200 python3 -m submitgen bench devrun/mla_merge.py --mode leaderboard --iters 8 --max-time 20 > $OUT/lb_merge.txt 2>&1; echo "rc $?" >> $OUT/lb_merge.txt
date -u >> $OUT/0_env.txt
