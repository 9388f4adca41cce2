"""Operations: the embedded launcher, the clock, admin CLIs and benchmarks."""
