set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=.:/tmp/site
(nvidia-smi -L; date -u) > $OUT/0_env.txt 2>&1
timeout 400 python3 benchmarks/sweep_moe.py --reps 7 --shapes 5,6,7,3,1,2,4 --variants cur,curpf,curgu,curgupf,pair128,pair128pf,pair128gu,pair128gupf,pair128gupf32 --out $OUT > $OUT/sweep.txt 2>&1
date -u >> $OUT/0_env.txt
