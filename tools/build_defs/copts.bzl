"""Compiler options that targets with tensor-sized loops add to their copts."""

# Bazel's opt is -O2, where GCC 12 vectorises a loop only under its "very
# cheap" cost model: not when the trip count is unknown or the arrays might
# overlap, i.e. not the optimizers', reductions' or row copies' loops. The
# bare flag means "dynamic" to GCC (SGD over 5k scattered 64-float rows:
# 924 -> 144 us in a micro-benchmark); clang, the fuzz config's compiler,
# only warns that it ignores it ("=dynamic" would be an error there). Set
# per target rather than in .bazelrc: a global copt changes every action,
# so every cached build and test result with it.
VECTORIZE_COPTS = ["-fvect-cost-model"]
