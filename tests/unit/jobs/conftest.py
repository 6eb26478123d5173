import pytest

from lambdas.jobs import settings as type_settings


@pytest.fixture(autouse=True)
def _fresh_type_settings():
    """Each test reads the job types' settings from its own environment."""
    type_settings.reset()
    yield
    type_settings.reset()
