"""Benchmarks (`python -m tests.bench [name]`): not part of the test run. Each prints one JSON
object with its baseline measured in the same run, because these machines are shared and noisy."""
