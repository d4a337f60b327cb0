#!/usr/bin/env python3
"""Tests of scripts/structure.py on small crates written for each rule, so
the check is seen to fail where it claims to: a circle through a parent's
use of its child, a file at a crate's root beside a folder, and the
lengths it reports. Run: `python3 scripts/structure_test.py`."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import structure  # noqa: E402


def crate(files):
    """A crate in a temporary folder: {relative path: text}."""
    root = tempfile.mkdtemp()
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return root


def cycles(files):
    return {(kind, rooms) for kind, rooms, _ in structure.crate_cycles(crate(files))}


# The bundler's circle as it was: create/mod.rs calls its child plan, which
# calls the root's request.rs, which reads create's Options.
CIRCLE = {
    "lib.rs": "mod create;\nmod request;\n",
    "create/mod.rs": "mod plan;\npub struct Options;\npub fn run() { plan::plan(); }\n",
    "create/plan.rs": "use crate::request::ask;\npub fn plan() { ask(); }\n",
    "request.rs": "use crate::create::Options;\npub fn ask() {}\n",
}


class Cycles(unittest.TestCase):
    def test_a_parents_use_of_its_child_closes_a_circle(self):
        found = cycles(CIRCLE)
        self.assertIn(("files", ("create/", "create/plan.rs", "request.rs")), found)
        self.assertIn(("folders", ("create/", "request.rs")), found)

    def test_a_child_path_in_a_comment_or_another_path_is_no_use(self):
        files = dict(CIRCLE)
        files["create/mod.rs"] = (
            "mod plan;\npub struct Options;\n// plan::plan() is called elsewhere\n"
            "pub fn run() { other::plan::plan(); }\n"
        )
        self.assertNotIn("files", {kind for kind, _ in cycles(files)})

    def test_a_childs_use_of_its_parent_is_no_circle(self):
        found = cycles(
            {
                "lib.rs": "mod store;\n",
                "store/mod.rs": "mod fs;\npub struct E;\npub fn f() { fs::g(); }\n",
                "store/fs.rs": "use super::E;\npub fn g() {}\n",
            }
        )
        self.assertEqual(found, set())

    def test_a_root_file_is_a_room_beside_a_folder(self):
        found = cycles(
            {
                "lib.rs": "mod fsutil;\nmod store;\n",
                "fsutil.rs": "use crate::store::error::E;\npub fn sync() {}\n",
                "store/mod.rs": "pub mod error;\nmod commit;\n",
                "store/error.rs": "pub struct E;\n",
                "store/commit.rs": "use crate::fsutil::sync;\n",
            }
        )
        self.assertEqual(found, {("folders", ("fsutil.rs", "store/"))})

    def test_a_file_inside_the_folder_is_no_room_beside_it(self):
        found = cycles(
            {
                "lib.rs": "mod store;\n",
                "store/mod.rs": "pub mod error;\npub mod fsutil;\nmod commit;\n",
                "store/error.rs": "pub struct E;\n",
                "store/fsutil.rs": "use crate::store::error::E;\npub fn sync() {}\n",
                "store/commit.rs": "use crate::store::fsutil::sync;\n",
            }
        )
        self.assertEqual(found, set())


    def test_a_path_attribute_makes_a_child_of_its_declarer(self):
        # state_build.rs is state's child, not a room beside it: its use of
        # state is no edge back, and state's use of it none forward.
        files = {
            "lib.rs": "mod serve;\n",
            "serve/mod.rs": "mod state;\nmod hub;\n",
            "serve/state.rs": '#[path = "state_build.rs"]\nmod build;\npub struct S;\n'
            "fn f() { build::b(); }\n",
            "serve/state_build.rs": "use super::S;\nuse crate::serve::hub::h;\n",
            "serve/hub/mod.rs": "pub fn h() {}\n",
        }
        self.assertEqual(cycles(files), set())
        files["serve/hub/mod.rs"] = "use crate::serve::state::S;\npub fn h() {}\n"
        self.assertEqual(
            cycles(files),
            {
                ("files", ("serve/hub/", "serve/state.rs", "serve/state_build.rs")),
                ("folders", ("serve/hub/", "serve/state.rs")),
            },
        )


class Lengths(unittest.TestCase):
    def test_every_function_is_measured_its_body_counted(self):
        root = crate({"a.rs": "fn short() {}\n\nfn long() {\n" + "    x();\n" * 5 + "}\n"})
        lengths = dict(structure.function_lengths(os.path.join(root, "a.rs")))
        self.assertEqual(lengths, {"short": 1, "long": 7})


if __name__ == "__main__":
    unittest.main()
