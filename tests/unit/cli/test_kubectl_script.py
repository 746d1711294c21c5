"""scripts/kubectl.sh, where it cannot install kubectl, says exactly what to install."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "kubectl.sh"


def test_without_kubectl_and_without_root_it_names_the_package(tmp_path: Path) -> None:
    # A PATH with a shell and a non-root `id`, but no kubectl and no apt-get.
    for tool in ("bash", "cat"):
        found = shutil.which(tool)
        assert found
        (tmp_path / tool).symlink_to(found)
    (tmp_path / "id").write_text("#!/bin/sh\necho 1000\n")
    (tmp_path / "id").chmod(0o755)
    done = subprocess.run(
        [str(tmp_path / "bash"), str(SCRIPT)],
        env={"PATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1
    assert "kubectl is not installed" in done.stderr
    assert "sudo apt-get install kubernetes-client" in done.stderr
    assert "https://kubernetes.io/docs/tasks/tools/" in done.stderr
