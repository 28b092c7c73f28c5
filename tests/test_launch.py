"""The launcher's port probe: a restart keeps the embedded gateway's port."""

from __future__ import annotations

import socket

from app.launch import port_free


def _time_wait_port() -> int:
    """A port whose last connection the server closed first: it sits in TIME_WAIT, as after an
    app that served agents and devices was restarted."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = server.accept()
    accepted.close()  # the server side closes first: its end goes to TIME_WAIT
    client.recv(1)
    client.close()
    server.close()
    return port


def test_a_port_in_time_wait_is_free_for_the_next_run():
    port = _time_wait_port()
    with socket.socket() as plain:  # what the old probe did: it called this port busy
        try:
            plain.bind(("127.0.0.1", port))
            plain_probe_free = True
        except OSError:
            plain_probe_free = False
    assert not plain_probe_free, "the setup did not leave the port in TIME_WAIT"
    assert port_free("127.0.0.1", port)


def test_a_port_someone_listens_on_is_taken():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        assert not port_free("127.0.0.1", listener.getsockname()[1])
