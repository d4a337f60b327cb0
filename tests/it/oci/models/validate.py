"""Validates JSON documents against pinned JSON schemas, for tests/it/oci/models.rs.

    python validate.py SCHEMA_DIR SCHEMA_FILE DOCUMENT...

A `$ref` to another file resolves to the file of that name in SCHEMA_DIR (the OCI
image-spec's schemas refer to each other by name under shifting base URIs). The schema's
own `$schema` picks the draft. Prints every error and exits 1 when any document fails;
also exits 1 if a deliberately broken copy of the first document passes, so a check that
accepts anything cannot pass.
"""

import copy
import json
import os
import sys

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

schema_dir, schema_file, docs = sys.argv[1], sys.argv[2], sys.argv[3:]


def load(name):
    with open(os.path.join(schema_dir, name)) as f:
        return json.load(f)


def retrieve(uri):
    return Resource.from_contents(load(uri.rstrip("/").rsplit("/", 1)[-1].split("#")[0]), default_specification=DRAFT4)


schema = load(schema_file)
cls = jsonschema.validators.validator_for(schema)
cls.check_schema(schema)
validator = cls(schema, registry=Registry(retrieve=retrieve), format_checker=cls.FORMAT_CHECKER)
failed = False
for path in docs:
    with open(path) as f:
        doc = json.load(f)
    errors = [f"{path}: {'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]
    for e in errors:
        print(e)
    failed |= bool(errors)
with open(docs[0]) as f:
    broken = copy.deepcopy(json.load(f))
broken["schemaVersion" if "schemaVersion" in broken else "descriptor"] = "broken"
if not list(validator.iter_errors(broken)):
    print("a broken document passed: the check accepts anything")
    failed = True
sys.exit(1 if failed else 0)
