"""The local store and the display state, in pure Python."""

from __future__ import annotations

from app.device import DisplayStatus, LocalStore, ServerClock
from app.device.state import display_status
from app.protocol import PromptRecord

BASE = {
    "sessionKey": "main",
    "questions": [
        {
            "id": "q",
            "header": "Q",
            "question": "Which?",
            "options": [{"label": "A"}, {"label": "B"}],
        }
    ],
    "createdAt": "2026-12-02T10:00:00.000Z",
    "expiresAt": "2026-12-02T10:15:00.000Z",
}


def record(id_="pr_1", version=1, status="pending", **kw) -> PromptRecord:
    return PromptRecord.model_validate(
        {**BASE, "id": id_, "version": version, "status": status, **kw}
    )


def test_apply_keeps_the_newest_version_whatever_the_order(tmp_path):
    store = LocalStore(tmp_path / "s.db")
    assert store.apply(record(version=1))
    assert store.apply(record(version=3, status="dismissed"))
    assert not store.apply(record(version=2, status="answered", answers={"q": ["A"]}))
    assert not store.apply(record(version=3, status="dismissed"))  # a duplicate is harmless
    assert store.get("pr_1").record.status == "dismissed"


def test_device_id_is_made_once_and_kept(tmp_path):
    first = LocalStore(tmp_path / "s.db").device_id
    assert first.startswith("dev_")
    assert LocalStore(tmp_path / "s.db").device_id == first


def test_outbox_survives_a_restart_and_shows_sending(tmp_path):
    store = LocalStore(tmp_path / "s.db")
    store.apply(record())
    key = store.enqueue("pr_1", "answer", {"q": ["A"]})
    store.close()
    again = LocalStore(tmp_path / "s.db")
    assert [(e.key, e.kind, e.answers) for e in again.outbox()] == [(key, "answer", {"q": ["A"]})]
    clock = ServerClock(wall=lambda: _ts("2026-12-02T10:01:00Z"))
    item = display_status(again.get("pr_1"), again.device_id, clock)
    assert item.status == DisplayStatus.SENDING and item.answers == {"q": ["A"]}


def _ts(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_display_statuses(tmp_path):
    store = LocalStore(tmp_path / "s.db")
    me = store.device_id
    clock = ServerClock(wall=lambda: _ts("2026-12-02T10:05:00Z"))

    def status_of(rec, gone=False):
        store.apply(rec)
        if gone:
            store.mark_gone(rec.id)
        return display_status(store.get(rec.id), me, clock)

    pending = status_of(record("p1"))
    assert pending.status == DisplayStatus.PENDING and clock.seconds_left(pending.record) == 600
    assert (
        status_of(
            record(
                "p2",
                2,
                "answered",
                answers={"q": ["A"]},
                resolvedBy={"kind": "device", "deviceId": me},
            )
        ).status
        == "answered"
    )
    assert status_of(
        record(
            "p3",
            2,
            "answered",
            answers={"q": ["B"]},
            resolvedBy={"kind": "device", "deviceId": "other"},
        )
    ).status == (DisplayStatus.ANSWERED_ELSEWHERE)
    by_link = record("p5", 2, "answered", answers={"q": ["A"]}, resolvedBy={"kind": "link"})
    assert status_of(by_link).status == DisplayStatus.ANSWERED_BY_LINK  # "Answered from a link"
    for s in ("dismissed", "expired", "cancelled"):
        assert status_of(record(f"x{s}", 2, s)).status == s
    assert status_of(record("p4"), gone=True).status == DisplayStatus.UNAVAILABLE
    late = ServerClock(wall=lambda: _ts("2026-12-02T10:15:00Z"))
    assert display_status(store.get("p1"), me, late).status == DisplayStatus.EXPIRED


def test_server_clock_ignores_a_wrong_wall_clock():
    mono = [100.0]
    for skew in (-3600, 0, 3600):
        clock = ServerClock(
            wall=lambda skew=skew: _ts("2026-12-02T10:00:00Z") + skew, monotonic=lambda: mono[0]
        )
        clock.observe(int(_ts("2026-12-02T10:05:00Z") * 1000))
        mono[0] += 60
        assert clock.seconds_left(record()) == 540
        mono[0] -= 60


def test_page_and_sessions_and_clear_history(tmp_path):
    store = LocalStore(tmp_path / "s.db")
    for i in range(5):
        store.apply(
            record(
                f"pr_{i}",
                createdAt=f"2026-12-02T10:0{i}:00.000Z",
                sessionKey="a" if i % 2 else "b",
                status="pending" if i == 4 else "dismissed",
                version=2,
            )
        )
    page = store.page(limit=3)
    assert [p.record.id for p in page] == ["pr_2", "pr_3", "pr_4"]  # newest three, oldest first
    older = store.page(limit=3, before="pr_2")
    assert [p.record.id for p in older] == ["pr_0", "pr_1"]
    assert [p.record.id for p in store.page(session_key="a")] == ["pr_1", "pr_3"]
    assert store.session_activity() == {
        "a": "2026-12-02T10:03:00.000Z",
        "b": "2026-12-02T10:04:00.000Z",
    }
    assert store.clear_history() == 4
    assert [p.record.id for p in store.page()] == ["pr_4"]  # the pending one stays


def test_ten_thousand_summaries_page_without_reading_everything(tmp_path):
    store = LocalStore(tmp_path / "s.db")
    records = [
        record(
            f"pr_{i:05d}",
            2,
            "dismissed",
            createdAt=f"2026-{1 + i // 5000:02d}-01T00:00:{i % 60:02d}.{i % 1000:03d}Z",
        )
        for i in range(10_000)
    ]
    store.apply_many(records)
    store.close()
    reopened = LocalStore(tmp_path / "s.db")
    assert reopened.count() == 10_000
    plan = " ".join(
        str(r)
        for r in reopened._db.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM prompts ORDER BY created_at DESC, id DESC LIMIT 50"
        )
    )
    assert "prompts_by_time" in plan and "TEMP B-TREE" not in plan
    assert len(reopened.page(limit=50)) == 50


def test_store_files_are_private(tmp_path):
    """The device token and every question and answer: 0600 files in a 0700 folder."""
    folder = tmp_path / "app"
    folder.mkdir(mode=0o755)
    store = LocalStore(folder / "device.sqlite3")
    store.set_meta("settings", "{}")
    assert folder.stat().st_mode & 0o777 == 0o700
    files = list(folder.iterdir())
    assert {f.name for f in files} >= {"device.sqlite3", "device.sqlite3-wal"}
    assert all(f.stat().st_mode & 0o777 == 0o600 for f in files)
    store.close()


def test_a_shared_sticky_folder_is_left_as_it_is(tmp_path):
    """Given /tmp-like folder (1777) the store's files are private, but the folder is not
    narrowed: that would lock everyone else out of it (#23, 14)."""
    import os
    import stat

    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    store = LocalStore(shared / "device.sqlite3")
    store.set_meta("settings", "{}")
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
    assert stat.S_IMODE((shared / "device.sqlite3").stat().st_mode) == 0o600
    store.close()


def test_a_gateway_named_by_the_environment_wins_and_keeps_the_device_name():
    """One rule for `python -m app` and a built or `flet run` app (#23): explicit for this
    run beats what was saved; without both variables nothing is named."""
    from app.device import DeviceEnvironment, Settings

    saved = Settings("http://saved:8765", "saved-token", "Pixel 8")
    env = {"ASK_USER_GATEWAY_URL": "http://named:8765", "ASK_USER_DEVICE_TOKEN": "named-token"}
    assert Settings.from_environment(saved, DeviceEnvironment.read(env)) == Settings(
        "http://named:8765", "named-token", "Pixel 8"
    )
    only_url = DeviceEnvironment.read({"ASK_USER_GATEWAY_URL": "http://named"})
    assert Settings.from_environment(saved, only_url) is None
    assert Settings.from_environment(Settings(), DeviceEnvironment.read({})) is None
