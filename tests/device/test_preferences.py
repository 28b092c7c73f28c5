"""The person's preferences, typed, in the device's store (#41): what an older app wrote reads
the same, and a save writes only what changed (tabs of one web app share the store)."""

from __future__ import annotations

from app.device import LocalStore
from app.device.preferences import AUTO, CARDS, STEPPER, Preferences


def test_what_an_older_app_wrote_reads_the_same_and_a_save_writes_only_changes(tmp_path):
    store = LocalStore(tmp_path / "device.sqlite3")
    assert Preferences.load(store) == Preferences("en", True, AUTO)  # nothing set yet
    store.set_meta("language", "fa")  # as the app before typed preferences wrote them
    store.set_meta("one_tap", "0")
    store.set_meta("web_layout", "cards")
    assert Preferences.load(store) == Preferences("fa", False, CARDS)
    store.set_meta("web_layout", "stepper")  # chosen in Settings
    assert Preferences.load(store).web_layout == STEPPER
    store.set_meta("web_layout", "something-else")  # what it cannot read: by the window's size
    assert Preferences.load(store).web_layout == AUTO
    written = []
    set_meta = store.set_meta
    store.set_meta = lambda key, value: (written.append((key, value)), set_meta(key, value))
    Preferences("fa", True, AUTO).save(store)
    assert written == [("one_tap", "1")]
    assert Preferences.load(store) == Preferences("fa", True, AUTO)
    store.close()
