#!/bin/sh
# Every fixture case (not only "rep") of the element-wise, logical, cast and reduction ops of
# issue 10 item 3, and of the older ops that gained integer data, on each backend against
# cpu64 within the op's trait bound (check_backend_ops with GD_TEST_ALL_CASES=1). make check
# runs it on cpu; tests/bench/gpu_ops-elt.sh on cuda, with GD_TEST_BACKENDS=cpu64,cuda.
ops="Erf,Reciprocal,Softsign,ThresholdedRelu,Sin,Cos,Tan,Asin,Acos,Atan,Sinh,Cosh,Asinh,Acosh"
ops="$ops,Atanh,Celu,Shrink,Mish,Sum,Mean,Mod,GreaterOrEqual,LessOrEqual,IsNaN,IsInf,And,Or"
ops="$ops,Xor,Not,BitShift,Where,Cast,CastLike,ReduceMin,ReduceProd,ReduceL1,ReduceL2"
ops="$ops,ReduceSumSquare,ReduceLogSum,ReduceLogSumExp,ArgMin,Hardmax,CumSum"
ops="$ops,Add,Sub,Mul,Div,Max,Min,Abs,Neg,Sign,Greater,Less,Equal,ReduceSum,ReduceMean"
ops="$ops,ReduceMax,ArgMax"
GD_TEST_OPS="$ops" GD_TEST_ALL_CASES=1 exec ./tests/engine/check_backend_ops
