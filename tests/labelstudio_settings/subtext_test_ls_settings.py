"""Label Studio's own settings for the suite's servers, with one change: test users' passwords are
hashed with Django's MD5 hasher, as Django's testing docs advise ("Speeding up the tests"), instead
of PBKDF2 at a million rounds (about 18 s of CPU per suite run: every invited reviewer and every
browser login). Logins are still checked against the hash. Loaded by the servers
tests/labelstudio_server.py starts (``DJANGO_SETTINGS_MODULE``, which label_studio/server.py only
sets by default); `make review` and production never see it.
"""

import os

# Label Studio's settings module reads Django's settings while it is being imported (its Sentry
# set-up); pointed at itself meanwhile, that read finds its half-made settings, as in a plain start.
os.environ["DJANGO_SETTINGS_MODULE"] = "label_studio.core.settings.label_studio"
from label_studio.core.settings.label_studio import *  # noqa: F403 - the whole of Label Studio's settings

os.environ["DJANGO_SETTINGS_MODULE"] = __name__

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
