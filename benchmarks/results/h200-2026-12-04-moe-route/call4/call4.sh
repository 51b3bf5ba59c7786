set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site devrun/whl/*.whl
export PYTHONPATH=.:/tmp/site
(nvidia-smi -L; date -u) > $OUT/0_env.txt 2>&1
timeout 300 python3 benchmarks/sweep_moe.py --reps 7 --shapes 3,2,5,1,4 --variants curpf,nc2,nc4,nc8,nc4s3 --out $OUT/s > $OUT/sweep_s.txt 2>&1
timeout 200 python3 benchmarks/sweep_moe.py --reps 7 --shapes 6,7 --variants pair128gupf,pair128gupfnc2,pair128gupfnc4 --out $OUT/l > $OUT/sweep_l.txt 2>&1
date -u >> $OUT/0_env.txt
