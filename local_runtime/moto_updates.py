"""moto's UpdateItem, with the same answers for less of the one CPU core moto's server has.

A job costs the local runtime two UpdateItems (the worker's claim and its outcome), and moto spent most
of a job's time on them (docs/performance.md). The work below redoes, per request, what does not
depend on the request's item, so it is done once instead (the condition patches serve PutItem too);
each patch keeps moto's own code path and its answers, errors included, and
tests/local_runtime/unit/test_moto_updates.py replays requests through patched and unpatched moto:

- `share_parsed_update_expressions`: moto parses each update expression twice per request (once to
  check the placeholders, once to apply it). The parsed tree only changes in the copy that moto's
  validator takes of it, so one tree per expression string is kept and shared; and that copy, a
  pure-Python `copy.deepcopy` of the whole tree, comes from the shared tree's pickle instead, which
  builds the same objects in C.
- `traverse_with_one_map`: the validator's ten passes over the tree rebuild each pass's
  node-type-to-handler map twice for every node and test each node against abstract classes
  (`isinstance` through `ABCMeta`); a pass now builds the map once and tests once per node type.
- `remember_clauses_while_reading` and `count_clauses_once`: two of those passes look up, at each of
  the ~40 nodes of a tree, the actions or the clauses of its whole subtree. Both only read the tree,
  so a subtree's actions are kept while the first runs, and the second counts each subtree's ADD,
  REMOVE and SET clauses once (moto's rule for the count, moto's error for a second clause).
- `check_expression_rules_once`: three of the validator's passes (at most one clause of each kind,
  no overlapping paths, no key attribute updated) read only the expression, its names and the table's
  key: moto's answer cannot change between two requests that share them. Each combination that
  passed is remembered, so the next such request skips those three walks over its tree; one that
  fails raises from moto's own pass, every time.
- `lex_conditions_once`: a condition expression is split into tokens twice per request too (the
  tokens do not depend on the request's names or values); each expression's tokens are kept.
- `parse_each_condition_once`: moto parses each request's condition twice, in its handler (to
  check the placeholders) and in its backend (to evaluate it); the second parse of the same text,
  names and values on the same thread reuses the first one's result, once.
- `serialise_attribute_values_directly`: the response serialiser looks up each of the ten members of
  every attribute value (`S`, `N`, `M`...) under all its aliases to find the one that is there; when
  an attribute value is a plain dict whose keys are member names and no alias of a member is another
  member's name (checked once per shape with moto's own alias rules), the value is read by its name.
"""

import copy
import functools
import pickle
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, cast

from moto.core.serialize import (
    AttributePicker,
    AttributePickerContext,
    ResponseSerializer,
    XFormedAttributePicker,
)
from moto.dynamodb import comparisons
from moto.dynamodb.parsing import ast_nodes, expressions, validators

SetAttribute = Callable[[Any, str, Any], None]
# moto's parsing modules are untyped: mypy sees none of their names.
_ast: Any = ast_nodes
_validators: Any = validators
Node = _ast.Node
UpdateExpressionParser = cast(Any, expressions).UpdateExpressionParser
PARSED_EXPRESSIONS = 512  # distinct update expressions kept; the lifecycle writes a few dozen
PICKLERS = (AttributePicker, XFormedAttributePicker)
# A validator pass that only reads the tree: a subtree's actions stay the same while it runs.
READ_ONLY_PASSES = (_validators.OverlappingPathsValidator,)
_reading = threading.local()  # the actions remembered by this thread's read-only pass, while one runs
_conditions = threading.local()  # this thread's last parsed condition, for its one reuse
_validating = threading.local()  # the update expression whose shared tree this thread's validator copied
# The passes that read only the tree, its placeholders' names and the table's key attributes, with
# what besides the expression each one reads.
EXPRESSION_ONLY_PASSES: dict[type, Callable[[Any], tuple[str, ...]]] = {
    _validators.ActionCountValidator: lambda _: (),
    _validators.OverlappingPathsValidator: lambda rule: (repr(rule.expression_attribute_names),),
    _validators.UpdateHashRangeKeyValidator: lambda rule: (
        repr(rule.expression_attribute_names),
        repr(rule.table_key_attributes),
    ),
}
ATTRIBUTE_VALUE = "AttributeValue"  # DynamoDB's (and its streams') shape of one typed value


class _ParsedExpressions:
    """Parsed update expressions by their text, each with its pickle for the validator's copies."""

    def __init__(self) -> None:
        self.trees: dict[str, Any] = {}
        self.pickles: dict[int, tuple[Any, bytes, str]] = {}  # id(tree) -> (tree, its pickle, its text)

    def parse(self, make: Callable[[str], Any], expression: str) -> Any:
        tree = self.trees.get(expression)
        if tree is None:
            tree = make(expression)  # a syntax error raises here, every time, as in moto
            if len(self.trees) >= PARSED_EXPRESSIONS:
                self.trees.clear()
                self.pickles.clear()
            self.trees[expression] = tree
            self.pickles[id(tree)] = (tree, pickle.dumps(tree, pickle.HIGHEST_PROTOCOL), expression)
        return tree

    def copy(self, value: Any, memo: dict[int, Any] | None = None) -> Any:
        shared = self.pickles.get(id(value))
        if shared is not None and shared[0] is value:
            _validating.expression = shared[2]
            return pickle.loads(shared[1])  # noqa: S301 (our own pickle of moto's own tree)
        _validating.expression = None  # a tree of unknown text: every pass walks it
        return copy.deepcopy(value, memo)


def share_parsed_update_expressions(set_attribute: SetAttribute = setattr) -> None:
    """One parsed tree per update expression, and the validator's copy of it from its pickle."""
    parsed = _ParsedExpressions()
    make = UpdateExpressionParser.make.__func__

    def parse(cls: type, expression: str) -> Any:
        if cls is not UpdateExpressionParser:
            return make(cls, expression)
        return parsed.parse(functools.partial(make, cls), expression)

    set_attribute(UpdateExpressionParser, "make", classmethod(parse))
    set_attribute(validators, "deepcopy", parsed.copy)


def traverse_with_one_map(set_attribute: SetAttribute = setattr) -> None:
    base = _ast.DepthFirstTraverser
    overridable = ("nodes_to_be_processed", "process", "traverse_node_recursively")
    original = base.traverse

    def traverse(self: Any, node: Any) -> Any:
        if any(getattr(type(self), name) is not getattr(base, name) for name in overridable):
            return original(self, node)
        handlers = self._processing_map()
        own_hook = type(self).pre_processing_of_child is not base.pre_processing_of_child
        by_type: dict[type, tuple[bool, Any]] = {}

        def kind_of(node: Any) -> tuple[bool, Any]:
            # Whether moto descends into the node, and the handler its `process` picks for it: for
            # these classes isinstance answers by the type alone, so once per type and pass.
            known = by_type.get(type(node))
            if known is None:
                handler = next((h for t, h in handlers.items() if isinstance(node, t)), None)
                known = by_type[type(node)] = (isinstance(node, Node), handler)
            return known

        def visit(node: Any, child_id: int) -> Any:
            # moto's traverse_node_recursively, with `handlers` built once instead of twice per node.
            is_node, process = kind_of(node)
            if is_node:
                parent_node = node.parent
                if node.children is not None:
                    for i, child_node in enumerate(node.children):
                        if own_hook:  # the base class's hook does nothing
                            self.pre_processing_of_child(node, i)
                        visit(child_node, i)
                if process is not None:
                    node = process(node)
                    node.parent = parent_node
                    if parent_node:
                        parent_node.children[child_id] = node
            return node

        if not isinstance(self, READ_ONLY_PASSES):
            return visit(node, -1)
        _reading.clauses = {}
        try:
            return visit(node, -1)
        finally:
            _reading.clauses = None

    set_attribute(base, "traverse", traverse)


def remember_clauses_while_reading(set_attribute: SetAttribute = setattr) -> None:
    find = _ast.Node.find_clauses

    def find_clauses(self: Any, clause_types: list[type]) -> list[Any]:
        remembered: dict[tuple[int, tuple[type, ...]], list[Any]] | None = getattr(_reading, "clauses", None)
        if remembered is None:
            return find(self, clause_types)
        key = (id(self), tuple(clause_types))
        if key not in remembered:
            remembered[key] = find(self, clause_types)  # its recursion into the children lands here too
        return list(remembered[key])  # moto's callers get a list of their own, as before

    set_attribute(_ast.Node, "find_clauses", find_clauses)


def count_clauses_once(set_attribute: SetAttribute = setattr) -> None:
    clause_kinds = (
        ("ADD", _ast.UpdateExpressionAddClause),
        ("REMOVE", _ast.UpdateExpressionRemoveClause),
        ("SET", _ast.UpdateExpressionSetClause),
    )
    descended = (_ast.Expression, _ast.UpdateExpressionFunction)

    def count(node: Any, kind: type, counted: dict[tuple[int, type], int]) -> int:
        # len(node.find_clauses([kind])), by the same rule, keeping every subtree's count
        key = (id(node), kind)
        if key not in counted:
            total = 0
            for child in node.children or []:
                if type(child) is kind:
                    total += 1
                elif isinstance(child, descended):
                    total += count(child, kind, counted)
            counted[key] = total
        return counted[key]

    def verify_action_counts(self: Any, node: Any) -> Any:
        # The pass only reads the tree, so a subtree's count stays true for the whole pass.
        counted = self.__dict__.setdefault("_counted_clauses", {})
        for name, kind in clause_kinds:
            if count(node, kind, counted) > 1:
                raise _validators.TooManyClauses(name)
        return node

    set_attribute(validators.ActionCountValidator, "verify_action_counts", verify_action_counts)


def check_expression_rules_once(set_attribute: SetAttribute = setattr) -> None:
    base = _ast.DepthFirstTraverser
    traverse = base.traverse
    passed: set[tuple[Any, ...]] = set()

    def once(self: Any, node: Any) -> Any:
        reads = EXPRESSION_ONLY_PASSES.get(type(self))
        expression = getattr(_validating, "expression", None)
        if reads is None or expression is None:
            return traverse(self, node)
        key = (type(self), expression, *reads(self))
        if key in passed:
            return node  # these passes hand back the tree they were given, unchanged
        checked = traverse(self, node)  # a refusal raises here, every time: only passes are kept
        if checked is node:
            if len(passed) >= PARSED_EXPRESSIONS * len(EXPRESSION_ONLY_PASSES):
                passed.clear()
            passed.add(key)
        return checked

    set_attribute(base, "traverse", once)


def lex_conditions_once(set_attribute: SetAttribute = setattr) -> None:
    parser = comparisons.ConditionExpressionParser
    lex = parser._lex_condition_expression
    lexed: dict[str, tuple[Any, ...]] = {}

    def lex_once(self: Any) -> deque[Any]:
        tokens = lexed.get(self.condition_expression)
        if tokens is None:
            tokens = tuple(lex(self))  # an expression moto cannot lex raises here, every time
            if len(lexed) >= PARSED_EXPRESSIONS:
                lexed.clear()
            lexed[self.condition_expression] = tokens
        # A token is an immutable tuple but for its list of children (empty when lexed): a new list each.
        return deque(token._replace(children=list(token.children)) for token in tokens)

    set_attribute(parser, "_lex_condition_expression", lex_once)


def parse_each_condition_once(set_attribute: SetAttribute = setattr) -> None:
    parser = comparisons.ConditionExpressionParser
    parse = parser.parse

    def parse_once(self: Any) -> Any:
        # The request's text, names and values, as they read now: a changed dict reads differently.
        key = repr(
            (self.condition_expression, self.expression_attribute_names, self.expression_attribute_values)
        )
        last = getattr(_conditions, "last", None)
        _conditions.last = None
        if last is not None and last[0] == key:
            _, names, values, condition = last
        else:
            condition = parse(self)  # an invalid condition raises here, every time
            names, values = list(self.expr_attr_names_found), list(self.expr_attr_values_found)
            # Kept for this thread's next parse only: moto's handler parses a request's condition to
            # check its placeholders, then its backend parses the same one again to evaluate it.
            _conditions.last = (key, names, values, condition)
        self.expr_attr_names_found.extend(names)
        self.expr_attr_values_found.extend(values)
        return condition

    set_attribute(parser, "parse", parse_once)


def serialise_attribute_values_directly(set_attribute: SetAttribute = setattr) -> None:
    original = ResponseSerializer._serialize_type_structure
    checked: dict[tuple[type, str, str], bool] = {}

    def direct(self: Any, shape: Any) -> bool:
        picker = self._value_picker
        if type(picker) not in PICKLERS or picker.response_transformers:
            return False
        key = (type(picker), self.service_model.service_name, shape.name)
        if key not in checked:
            checked[key] = _members_found_by_name(picker, shape)
        return checked[key]

    def structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if not (
            shape.name == ATTRIBUTE_VALUE
            and type(value) is dict
            and value.keys() <= shape.members.keys()
            and direct(self, shape)
        ):
            return original(self, serialized, value, shape, key)
        wrapper = self.MAP_TYPE() if key else serialized
        for member_key, member_shape in shape.members.items():
            member_shape.parent = shape
            member_value = value.get(member_key)
            if member_value is not None:
                self._serialize(wrapper, member_value, member_shape, member_key)
        if key:
            self._default_serialize(serialized, wrapper, shape, key)
        return None

    set_attribute(ResponseSerializer, "_serialize_type_structure", structure)


def _members_found_by_name(picker: Any, shape: Any) -> bool:
    names = set(shape.members)
    for member_key, member_shape in shape.members.items():
        member_shape.parent = shape  # as the serialiser sets it before picking
        context = AttributePickerContext(obj={}, key=member_key, shape=member_shape)
        if set(picker.get_possible_keys(context)) & names != {member_key}:
            return False
    return True


def apply(set_attribute: SetAttribute = setattr) -> None:
    share_parsed_update_expressions(set_attribute)
    traverse_with_one_map(set_attribute)
    remember_clauses_while_reading(set_attribute)
    count_clauses_once(set_attribute)
    check_expression_rules_once(set_attribute)
    lex_conditions_once(set_attribute)
    parse_each_condition_once(set_attribute)
    serialise_attribute_values_directly(set_attribute)
