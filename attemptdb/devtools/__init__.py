"""Developer tools: benchmarks, synthetic histories, the demo, the fault bench."""
