"""Operations: the embedded launcher, the clock and the admin CLIs (benchmarks live in ops.bench)."""
