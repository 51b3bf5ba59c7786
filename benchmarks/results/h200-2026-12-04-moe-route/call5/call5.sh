set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site devrun/whl/*.whl
export PYTHONPATH=.:/tmp/site
(nvidia-smi -L; date -u) > $OUT/0_env.txt 2>&1
timeout 300 python3 benchmarks/sweep_moe.py --reps 7 --shapes 3,6,7,2,1 --variants shipped,tb2k,tb4k,tb4kw8,rw8 --out $OUT > $OUT/sweep.txt 2>&1
date -u >> $OUT/0_env.txt
