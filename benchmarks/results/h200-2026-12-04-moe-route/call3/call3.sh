set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site devrun/whl/*.whl
export PYTHONPATH=.:/tmp/site
(nvidia-smi -L; date -u) > $OUT/0_env.txt 2>&1
timeout 300 python3 benchmarks/sweep_moe.py --reps 7 --shapes 3,2,5,1,4 --variants shipped,s32gu,s32gut16,s32gus4,s32gunopf,s32pf --out $OUT > $OUT/sweep.txt 2>&1
date -u >> $OUT/0_env.txt
