set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=.:/tmp/site
(nvidia-smi -L; date -u) > $OUT/0_env.txt 2>&1
B="python3 -m submitgen bench --shapes benchmark --iters 20"
timeout 150 $B devrun/mla_lazy.py > $OUT/bench_lazy_1.txt 2>&1
timeout 150 $B devrun/mla_main.py > $OUT/bench_main_1.txt 2>&1
timeout 150 $B devrun/mla_main.py > $OUT/bench_main_2.txt 2>&1
timeout 150 $B devrun/mla_lazy.py > $OUT/bench_lazy_2.txt 2>&1
timeout 150 python3 -m submitgen test devrun/mla_lazy.py --shapes all > $OUT/test_lazy.txt 2>&1; echo "rc $?" >> $OUT/test_lazy.txt
date -u >> $OUT/0_env.txt
