set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site devrun/whl/*.whl
export PYTHONPATH=.:/tmp/site
(nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm --format=csv; python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; date -u) > $OUT/0_env.txt 2>&1
mkdir -p $OUT/a $OUT/b
timeout 240 python3 benchmarks/sweep_moe.py --reps 7 --shapes 1,2,3,4,5,6,7 --variants shipped,rp16k,rp16kb1k,rp16kb2k,rp4k --out $OUT/a > $OUT/a/sweep.txt 2>&1
timeout 300 python3 benchmarks/sweep_moe.py --reps 7 --shapes 5,6,7 --variants shipped,mr32,mr32sp,mr32sp2,mr32sp3,l64gupfsp,l64gupfsp2,pair128gupf,pair128gupfsp,pair128gupfsp2 --out $OUT/b > $OUT/b/sweep.txt 2>&1
date -u >> $OUT/0_env.txt
