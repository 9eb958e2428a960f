"""The per-run token: a server off loopback refuses to start without it; with it, requests without it get 401."""
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request

from atk_trainer.serve.run_token import authorized, is_loopback

TRAINER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_server(host, token=None):
    env = {k: v for k, v in os.environ.items() if k != "ATK_RUN_TOKEN"}
    env.update({"PYTHONPATH": TRAINER_DIR, "PYTHONUNBUFFERED": "1", **({"ATK_RUN_TOKEN": token} if token else {})})
    return subprocess.Popen(
        [sys.executable, "-m", "atk_trainer", "--host", host, "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def status(url, headers):
    try:
        with urllib.request.urlopen(urllib.request.Request(url + "/control/health", headers=headers), timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_refuses_to_listen_off_loopback_without_a_token():
    proc = run_server("0.0.0.0")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert "refusing to listen on 0.0.0.0 without a run token: set ATK_RUN_TOKEN" in out


def test_answers_401_to_requests_without_the_token():
    proc = run_server("127.0.0.1", token="s3cret")
    try:
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        assert "requests need the per-run token" in lines[0]
        url = re.search(r"serving on (http://[\d.]+:\d+)", lines[1]).group(1)
        assert [
            status(url, {}),
            status(url, {"Authorization": "Bearer wrong"}),
            status(url, {"Authorization": "Bearer s3cret"}),
        ] == [401, 401, 200]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_loopback_and_authorized():
    assert [is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "localhost", "0.0.0.0", "10.1.2.3")] == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert [
        authorized({}, None),
        authorized({}, "t"),
        authorized({"Authorization": "Bearer t"}, "t"),
        authorized({"Authorization": "t"}, "t"),
    ] == [True, False, True, False]
