"""Backends run a model; readers (vlmrobust.models.readers) turn dataset rows
into backend calls. A backend provides the primitives it can and says which in
``capabilities``; a reader that needs a missing one is refused in one line."""
