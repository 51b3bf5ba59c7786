set -u
cd .wt-h2
export PYTHONPATH=$PWD
O=$OUT
SG="python3 -m submitgen"
{ date -u; nvidia-smi; nvidia-smi -q -d CLOCK | head -40; python3 -c "import torch,triton,numpy,sys;print(sys.version);print(torch.__version__, torch.version.cuda, triton.__version__, numpy.__version__)"; } > $O/0_env.txt 2>&1
RK=$PWD/.h200/rk
EV=/tmp/ev; mkdir -p $EV
cp $RK/eval.py $RK/utils.py $RK/mxfp4-mm/task.py $RK/mxfp4-mm/reference.py $EV/ && cp .h200/mm.py $EV/submission.py && cp .h200/benchmarks.txt $EV/
SH="--shape m=4,n=2880,k=512,seed=4565 --shape m=16,n=2112,k=7168,seed=15 --shape m=32,n=4096,k=512,seed=457 --shape m=64,n=7168,k=2048,seed=687 --shape m=64,n=2880,k=512,seed=54 --shape m=128,n=2112,k=7168,seed=24 --shape m=256,n=3072,k=1536,seed=7856 --shape m=256,n=7168,k=2048,seed=223"
ev() { echo "start $(date -u +%T)" > $O/$1.stdout.txt; (cd $EV && POPCORN_FD=3 timeout 125 python3 eval.py benchmark benchmarks.txt 3>$O/$1.popcorn.txt >>$O/$1.stdout.txt 2>&1; echo "rc $?" >> $O/$1.stdout.txt); echo "end $(date -u +%T)" >> $O/$1.stdout.txt; }
bench() { echo "start $(date -u +%T)" > $O/$1.stderr.txt; timeout 125 $SG bench .h200/mm.py $SH --json > $O/$1.json 2>>$O/$1.stderr.txt; echo "rc $?" >> $O/$1.stderr.txt; echo "end $(date -u +%T)" >> $O/$1.stderr.txt; }
ev 1_evalpy_A
bench 2_bench_C
ev 3_evalpy_B
bench 4_bench_D
echo "start $(date -u +%T)" > $O/5_test_rk.txt
timeout 60 $SG test .h200/mm.py --reference-kernels $RK/mxfp4-mm --mode benchmark --timeout 58 >> $O/5_test_rk.txt 2>&1; echo "rc $?" >> $O/5_test_rk.txt
date -u >> $O/5_test_rk.txt
ls -la $O
