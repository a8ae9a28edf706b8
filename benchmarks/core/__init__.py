"""The core every tool in benchmarks/ is built on, each job written once:

- runs: naming and finding run folders, reading their TensorBoard scalars (resume-aware), timing them;
- launch: running a lesson's main() in process, or a lesson in a process of its own;
- records: the one CSV writer and reader, and the rows / curves / diagnostics files beside a benchmark's CSV;
- stats: rolling means, percentiles, spreads, mean +/- std over seeds, curves read at a step;
- plots: figures drawn to files, the mean of several runs with its min-max band;
- grid: cells (script, task, setting, seed) run in parallel, skipped when done and resumed when stopped.
"""
