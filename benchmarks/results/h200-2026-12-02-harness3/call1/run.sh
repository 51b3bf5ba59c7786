set -u
cd .wt-h3
export PYTHONPATH=$PWD
O=$OUT
SG="python3 -m submitgen"
RK=$PWD/.h200/rk
TK=$PWD/.h200/rk-tee
EV=/tmp/ev; mkdir -p $EV
cp $RK/eval.py $RK/utils.py $RK/mxfp4-mm/task.py $RK/mxfp4-mm/reference.py $EV/ && cp .h200/mm.py $EV/submission.py
python3 -c "import sys; sys.path.insert(0, '.'); from submitgen.evaluate.reftask import read_task, cases_text; t = read_task('$RK/mxfp4-mm'); open('$EV/benchmarks.txt', 'w').write(cases_text(t.cases('benchmark')))" 2>&1
{ date -u; git log -1 --format='%H %s' | cut -c1-100; git status --short | head; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; python3 -c "import torch,triton,numpy,sys;print(sys.version);print(torch.__version__, torch.version.cuda, triton.__version__, numpy.__version__)"; echo "cases:"; cat $EV/benchmarks.txt; } > $O/0_env.txt 2>&1
step() { echo "== $1 start $(date -u +%T)" >> $O/0_env.txt; }
done_() { echo "== $1 end $(date -u +%T) rc $2" >> $O/0_env.txt; }
step 1_evalpy; (cd $EV && POPCORN_FD=3 timeout 100 python3 eval.py benchmark benchmarks.txt 3>$O/1_evalpy.popcorn.txt >>$O/0_env.txt 2>&1); done_ 1_evalpy $?
step 2_test_rk; TEE_FILE=$O/2_tee.popcorn.txt timeout 100 $SG test .h200/mm.py --reference-kernels $TK/mxfp4-mm --mode benchmark > $O/2_test_rk.txt 2>&1; done_ 2_test_rk $?
step 3_bench_rk; TEE_FILE=$O/3_tee.popcorn.txt timeout 100 $SG bench .h200/mm.py --reference-kernels $TK/mxfp4-mm > $O/3_bench_rk.txt 2>&1; done_ 3_bench_rk $?
step 4_bench; timeout 90 $SG bench .h200/mm.py > $O/4_bench.txt 2>&1; done_ 4_bench $?
ls -la $O >> $O/0_env.txt
