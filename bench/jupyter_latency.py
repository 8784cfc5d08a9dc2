"""Times a Jupyter kernel through jupyter_client: its start until it answers (kernel_info), and
an execute's round trip (request to reply). python3 jupyter_latency.py KERNEL_NAME RUNS; prints
JSON. The kernel runs as Jupyter would start it for a notebook (JPY_SESSION_NAME set)."""

import json
import os
import sys
import time

from jupyter_client import KernelManager

name, runs = sys.argv[1], int(sys.argv[2])
env = {**os.environ, "JPY_SESSION_NAME": "bench.ipynb"}
started = time.perf_counter()
km = KernelManager(kernel_name=name)
km.start_kernel(env=env)
kc = km.client()
kc.start_channels()
kc.wait_for_ready(timeout=120)
ready = time.perf_counter() - started
first = time.perf_counter()
kc.execute_interactive("x = 1", timeout=120, output_hook=lambda msg: None)
first_run = time.perf_counter() - first
rounds = []
for _ in range(runs):
    begin = time.perf_counter()
    kc.execute_interactive("x + 1", timeout=120, output_hook=lambda msg: None)
    rounds.append(time.perf_counter() - begin)
kc.stop_channels()
km.shutdown_kernel(now=False)
print(json.dumps({"ready": ready, "first": first_run, "rounds": rounds}))
