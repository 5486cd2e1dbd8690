"""Code the tests and the benchmark scripts share. The tests run it at small sizes and assert;
the scripts in benchmarks/ run it at full size and print the figures.

- `reliability`: concurrent runs, fault classes and fuzzed inputs (tests/reliability/,
  benchmarks/reliability.py).
- `kill_resume`: kill -9 at random points and `flowcall runs resume` to the end, with the
  slow plugin tools in `kill_plugins/` (tests/reliability/, benchmarks/kill_resume.py).
- `example_checks`: what "the example flow worked" means (tests/integration/,
  benchmarks/example_flows.py, benchmarks/latency.py).
- `product_questions`: FlowCall's own question set with every correct call, and the argument
  checks' refusals of those calls (tests/calling/, benchmarks/false_refusals.py,
  benchmarks/product_calls.py).
"""
