"""Connects jupyter_client to a kernel started elsewhere (the Windows tests start it under Wine)
from its connection file, asks kernel_info and runs one cell, prints both as JSON, and shuts the
kernel down: python3 connect_kernel.py CONNECTION_FILE."""

import json
import sys

from jupyter_client import BlockingKernelClient

kc = BlockingKernelClient(connection_file=sys.argv[1])
kc.load_connection_file()
kc.start_channels()
kc.wait_for_ready(timeout=300)
info = kc.kernel_info(reply=True, timeout=300)["content"]
outputs = []
reply = kc.execute_interactive("import sys\nprint(sys.platform)\n6 * 7", timeout=300, output_hook=outputs.append)
kc.shutdown()
print(
    json.dumps(
        {
            "implementation": info["implementation"],
            "language": info["language_info"]["name"],
            "status": reply["content"]["status"],
            "reply": reply["content"],
            "outputs": [
                {"type": m["msg_type"], "content": m["content"]}
                for m in outputs
                if m["msg_type"] in ("stream", "execute_result", "error")
            ],
        }
    )
)
kc.stop_channels()
