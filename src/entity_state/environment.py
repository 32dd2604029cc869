"""Settings for the dbt calls a command makes in its own process: dbt and the profile read them from os.environ."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager


@contextmanager
def overridden_environment(settings: Mapping[str, str]) -> Iterator[None]:
    """`settings` in os.environ for the code inside; the environment as it was afterwards, a variable that was not
    set before removed again."""
    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
