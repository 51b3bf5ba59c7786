set -u
cd .wt-h3
export PYTHONPATH=$PWD
O=$OUT
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv; } > $O/0_env.txt 2>&1
echo "== 2_test_rk start $(date -u +%T)" >> $O/0_env.txt
TEE_FILE=$O/2_tee.popcorn.txt timeout 140 python3 -m submitgen test .h200/mm.py --reference-kernels $PWD/.h200/rk-tee/mxfp4-mm --mode benchmark > $O/2_test_rk.txt 2>&1
echo "== 2_test_rk end $(date -u +%T) rc $?" >> $O/0_env.txt
