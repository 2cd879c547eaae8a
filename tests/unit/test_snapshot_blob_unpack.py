"""storage/pg/snapshot_blobs: a packed snapshot unpacks and publishes; a tar with anything but plain files is refused
(the blob comes from a database row: it must not write outside its directory)."""

from __future__ import annotations

import io
import os
import tarfile

import pytest

from storage.pg.snapshot_blobs import _unpack, pack
from storage.records import OffsetCommitKey, OffsetCommitValue
from storage.snapshot import PREFIX, TMP_PREFIX, read_snapshot, write_snapshot


def test_a_packed_snapshot_unpacks_and_reads_back(tmp_path):
    offsets = [(OffsetCommitKey("g", "t", 0), OffsetCommitValue(7, "", 1))]
    path = write_snapshot(str(tmp_path / "a"), 3, [], offsets, 9)
    name = os.path.basename(path)
    target = tmp_path / "b" / "__consumer_offsets-3"
    target.mkdir(parents=True)
    _unpack(pack(path), str(target / (TMP_PREFIX + name[len(PREFIX):])))
    assert read_snapshot(str(tmp_path / "b"), 3) == ([("g", None)], offsets, 9)


def _tar(*members: tarfile.TarInfo) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for member in members:
            tar.addfile(member, io.BytesIO(b"x" * member.size) if member.isfile() else None)
    return out.getvalue()


@pytest.mark.parametrize("member", ["../escape", "sub/file", "/abs", "link"])
def test_members_other_than_plain_files_are_refused(tmp_path, member):
    info = tarfile.TarInfo(member)
    if member == "link":
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
    else:
        info.size = 1
    with pytest.raises(ValueError, match="not a plain file name"):
        _unpack(_tar(info), str(tmp_path / f"{TMP_PREFIX}x"))
    assert not (tmp_path / "escape").exists()
