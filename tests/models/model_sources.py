"""The scripts that make the test models (build_models.py and what it imports): a model folder
older than any of them is rebuilt. Apart from build_models.py so that the tests can check it
without importing torch, which build_models.py needs and a test that only reads the models does
not (a second or so of every test process's start)."""

import os

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = [os.path.join(HERE, name) for name in ("build_models.py", "transformers_zoo.py", "library_models.py",
                                                 "handbuilt_models.py", "mask_models.py", "model_sources.py")]
