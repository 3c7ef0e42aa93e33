"""A long-lived prover process per device, fed by short-lived callers (Airflow tasks).

Why: a task that proves on the GPU itself pays the CUDA context, kernel loading and the
proving key's upload on every partition, and the GPU idles between one task ending and the
next starting (about a second under Airflow's scheduler, measured in ANCHORS.md). The
service keeps all of that resident, maps and page-locks the partitions' shared segments
(a/b/c written there once by synthesis), and uploads the next partition while the device
computes the one before, so the device goes from one partition straight to the next.

    server.py    the service: one device thread (the fine-grained GPU mutex: one proof's
                 kernels at a time), an upload thread on its own copy stream, segments
                 mapped in the callers' connection threads, proving keys cached with their
                 tables resident within a device-memory budget (least recently used evicted)
    client.py    connect (spawning the service on first use), submit a job, status, stop
    protocol.py  the wire format: one JSON object a line over a Unix socket
    admin.py     the operator's requests (preload, evict a key) and the typed status
    keys_cli.py  ``proofflow keys preload|evict|list``
"""
