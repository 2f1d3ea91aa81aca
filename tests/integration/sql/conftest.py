"""Fixtures of the `iolens sql` tests."""
from __future__ import annotations

import os
import socket
import threading
import time

import pytest


@pytest.fixture
def probes(tmp_path):
    """A FIFO that records whether anything opened it for reading, and a TCP port that records connections."""
    fifo = tmp_path / "secret.csv"
    os.mkfifo(fifo)
    opened, connected, stop = [], [], threading.Event()

    def watch_fifo():
        while not stop.is_set():
            try:  # a non-blocking open for writing succeeds only while a reader has the FIFO open
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                time.sleep(0.005)
                continue
            opened.append(True)
            os.write(fd, b"a,b\nSECRET,1\n")
            os.close(fd)

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.05)

    def watch_port():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            connected.append(True)
            conn.close()

    threads = [threading.Thread(target=watch_fifo, daemon=True), threading.Thread(target=watch_port, daemon=True)]
    for t in threads:
        t.start()
    yield {"fifo": fifo, "port": server.getsockname()[1], "opened": opened, "connected": connected}
    stop.set()
    for t in threads:
        t.join(timeout=2)
    server.close()
