"""When an arrival becomes a system notification: only in the background, each prompt once."""

from __future__ import annotations

from pathlib import Path

import flet as ft

from app.device import DeviceEnvironment
from app.ui.alerts import AlertPolicy, notification_id

from .test_screen import add, record, screen  # noqa: F401  (the screen fixture)


def test_arrivals_are_announced_only_while_the_app_is_not_in_front(screen):  # noqa: F811
    policy = AlertPolicy()
    announced: list[list[str]] = []
    screen.on_arrival = lambda items: announced.append([i.id for i in policy.to_announce(items)])
    add(screen, record("pr_front", 2))
    assert announced == [[]]  # in front: the card itself is the news
    policy.lifecycle(ft.AppLifecycleState.HIDE)
    add(screen, record("pr_away", 3), record("pr_away_2", 4))
    assert announced[-1] == ["pr_away_2", "pr_away"]
    screen.reload()  # nothing new
    assert len(announced) == 2
    policy.lifecycle(ft.AppLifecycleState.RESUME)
    add(screen, record("pr_back", 5))
    assert announced[-1] == []


def test_what_waited_before_the_screen_opened_is_no_arrival(screen):  # noqa: F811
    from app.ui.screen import Screen

    screen.core.store.apply_many([record("pr_old", 1)])
    reopened = Screen(screen.core)
    told: list = []
    reopened.on_arrival = told.append
    reopened.reload()
    assert told == [] and [i.id for i in reopened.state.waiting] == ["pr_old"]
    reopened.close()


def test_the_same_prompt_is_never_announced_twice():
    policy = AlertPolicy()
    policy.lifecycle(ft.AppLifecycleState.PAUSE)

    class Item:
        def __init__(self, id_: str) -> None:
            self.id = id_

    a, b = Item("pr_a"), Item("pr_b")
    assert [i.id for i in policy.to_announce([a])] == ["pr_a"]
    assert [i.id for i in policy.to_announce([a, b])] == ["pr_b"]


def test_notification_ids_are_stable_and_31_bit():
    assert notification_id("pr_01ABC") == notification_id("pr_01ABC")
    assert notification_id("pr_01ABC") != notification_id("pr_01ABD")
    assert 0 <= notification_id("pr_" + "Z" * 26) < 2**31


def test_only_a_built_app_tries_system_notifications():
    assert not DeviceEnvironment.read({"ASK_USER_APP_DATA": "/d"}).built_app
    built = DeviceEnvironment.read({"FLET_APP_STORAGE_DATA": "/data/app"})
    assert built.built_app and built.data_dir() == Path("/data/app")
    both = DeviceEnvironment.read({"FLET_APP_STORAGE_DATA": "/x", "ASK_USER_APP_DATA": "/d"})
    assert both.data_dir() == Path("/d")  # named for this run beats the build's folder
