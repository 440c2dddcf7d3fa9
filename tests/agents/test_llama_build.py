"""The llama.cpp that ``make install`` builds runs where it was built, and an engine that dies says so."""

import glob
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.conftest import ROOT
from wikigame_spark.devtools.local_server import PROJECT_DIR

BUILT = os.path.join(PROJECT_DIR, ".cache", "llama.cpp", "bin")
# Every AMX instruction (Intel SDM: AMX-TILE, AMX-INT8, AMX-BF16, AMX-FP16), as objdump names them.
AMX = re.compile(
    r"\s(ldtilecfg|sttilecfg|tilerelease|tilezero|tileloaddt?1?|tilestored|tdpb[su]{2}d|tdpbf16ps|tdpfp16ps)\s"
)


def amx_instructions(path: str) -> int:
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True, text=True, check=True)
    return len(AMX.findall(listing.stdout))


def test_the_amx_count_sees_amx_code(tmp_path):
    """The count below finds the instructions when they are there: a tile kernel built with them."""
    source = tmp_path / "tile.c"
    source.write_text(
        "#include <immintrin.h>\n"
        "void tile(void *cfg, void *out)\n"
        "{ _tile_loadconfig(cfg); _tile_zero(0); _tile_stored(0, out, 64); _tile_release(); }\n"
    )
    subprocess.run(["cc", "-O2", "-mamx-tile", "-shared", "-fPIC", "-o", tmp_path / "tile.so", source], check=True)
    assert amx_instructions(str(tmp_path / "tile.so")) == 4


def test_the_build_holds_no_amx_instruction():
    """ggml's AMX kernels crash at their first decode on AMX hosts: the build keeps them out of its
    machine code on every host, whatever -march=native allows."""
    libraries = [p for p in glob.glob(os.path.join(BUILT, "lib*.so*")) if not os.path.islink(p)]
    assert any("libggml-cpu" in p for p in libraries), libraries
    assert {os.path.basename(p): amx_instructions(p) for p in libraries} == {os.path.basename(p): 0 for p in libraries}


def smoke(**env) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "wikigame_spark.devtools.smoke_decode"]
    return subprocess.run(command, cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_smoke_decode_passes_on_this_host():
    done = smoke()
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert line.startswith("llama.cpp decodes gemma-3-270m here: python engine: 8 tokens"), line
    assert re.search(r"native engine: 8 tokens, prompt \d+ tokens/s, generation [\d.]+ tokens/s$", line), line


@pytest.mark.slow
def test_an_engine_that_dies_is_named_with_its_signal(tmp_path):
    """A llama-server that dies as it loads (here one that kills itself with SIGSEGV, as ggml's AMX
    kernels did) fails the smoke decode in one line naming the engine and the signal."""
    crashing = tmp_path / "llama-server"
    crashing.write_text("#!/bin/sh\necho loading\nkill -SEGV $$\n")
    crashing.chmod(0o755)
    done = smoke(LLAMA_SERVER=str(crashing))
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: this llama.cpp build cannot decode on this machine: the llama.cpp server "), last
    assert "(native engine, gemma-3-270m) died of SIGSEGV while loading; its log: " in last
    assert "Traceback" not in done.stderr
    log = last.rsplit("its log: ", 1)[1]
    assert open(log).read() == "loading\n"


def test_bindings_that_cannot_load_their_library_are_named(tmp_path):
    """The python engine's failure in the same one line: here its library folder is empty."""
    done = smoke(LLAMA_CPP_LIB_PATH=str(tmp_path))
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "error: this llama.cpp build cannot decode on this machine: llama.cpp's Python bindings (python engine) "
        "exited with status 1 decoding gemma-3-270m: "
    ), last


@pytest.mark.slow
def test_the_devtools_server_exits_with_its_engines_signal(tmp_path):
    """The engine of ``python -m wikigame_spark.devtools.local_server`` killed while it serves: the
    server says how it died and where its log is, and exits 128 + the signal (not 0)."""
    from wikigame_spark.devtools.local_server import free_port

    port = free_port()
    command = [sys.executable, "-m", "wikigame_spark.devtools.local_server", "--port", str(port), "--engine", "native"]
    server = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().startswith(f"serving gemma-3-270m at http://127.0.0.1:{port}/v1")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=30) as r:
            assert r.status == 200
        children = subprocess.run(["pgrep", "-P", str(server.pid)], capture_output=True, text=True).stdout.split()
        assert len(children) == 1
        os.kill(int(children[0]), signal.SIGKILL)
        rc = server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
            time.sleep(1)
    err = server.stderr.read()
    assert rc == 128 + signal.SIGKILL
    last = err.strip().splitlines()[-1]
    assert re.fullmatch(
        r"error: the llama.cpp server \(native engine, gemma-3-270m\) died of SIGKILL while serving; its log: \S+\.log",
        last,
    ), err
    assert "Traceback" not in err
