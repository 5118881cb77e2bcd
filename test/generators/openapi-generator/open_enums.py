# Lets the models that openapi-generator's python generator (7.25) makes read enum values added
# after they were generated, as the contract allows within v1, instead of failing the whole answer
# with a pydantic ValidationError. docs/generating-clients.md shows it; check.py uses it.
import enum
import inspect

import pydantic


def _keep_unknown(cls, value):
    """An Enum's `_missing_` hook: a value the class does not list becomes a member of its own."""
    if not isinstance(value, str):
        return None
    member = str.__new__(cls, value)
    member._name_ = 'UNKNOWN'
    member._value_ = value
    return member


def open_enums(models):
    """Opens every enum of a generated `models` package, once, before any answer is read.

    A named enum (`MediaRole`) is an Enum class: it gets `_missing_`. An inline one
    (`ImportLineResult.status`) is a string checked by a generated `<field>_validate_enum`
    validator: that check is dropped. Then each model rebuilds its validation with both.
    """
    classes = [cls for _, cls in inspect.getmembers(models, inspect.isclass)]
    for cls in classes:
        if issubclass(cls, enum.Enum) and issubclass(cls, str):
            cls._missing_ = classmethod(_keep_unknown)
    schemas = [cls for cls in classes if issubclass(cls, pydantic.BaseModel)]
    for cls in schemas:
        validators = cls.__pydantic_decorators__.field_validators
        for name in [name for name in validators if name.endswith('_validate_enum')]:
            del validators[name]
    for cls in schemas:
        cls.model_rebuild(force=True)
