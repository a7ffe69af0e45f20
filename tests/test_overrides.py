"""``--set field=value`` overrides (``nalu_jax.config.apply_overrides``): values take the
field's own type, ``None`` is None, tuples parse; a bad field or value is a ConfigError."""

import pytest

from nalu_jax.config import ConfigError, apply_overrides, load_config, parse_value


def test_values_take_the_fields_types():
    c = load_config("single_module", "op=mul,model=nmu")
    apply_overrides(
        c,
        [
            "task.range_index=3",  # int field whose default is None
            "seed_block=5",
            "train.lr=1e-2",
            "train.reg_scale=2",  # an int given to a float field becomes a float
            "train.sampler=threefry",
            "model.single_unit=false",
            "task.threshold_epsilon=None",
            "task.interpolation_range=(1.0, 2.0)",  # untyped (None) field: a literal
            "task.extrapolation_range=((-6, -2), (2, 6))",
        ],
    )
    assert c.task.range_index == 3 and type(c.task.range_index) is int
    assert c.seed_block == 5 and type(c.seed_block) is int
    assert c.train.lr == 0.01 and type(c.train.lr) is float
    assert c.train.reg_scale == 2.0 and type(c.train.reg_scale) is float
    assert c.train.sampler == "threefry"
    assert c.model.single_unit is False
    assert c.task.threshold_epsilon is None
    assert tuple(c.task.interpolation_range) == (1.0, 2.0)
    assert tuple(map(tuple, c.task.extrapolation_range)) == ((-6, -2), (2, 6))


def test_a_swept_tuple_field_parses():
    c = load_config("arithmetic", "model=nmu,op=mul")
    apply_overrides(c, ["sweep.lr=(1e-3, 1e-2)"])
    assert tuple(c.sweep.lr) == (1e-3, 1e-2)


@pytest.mark.parametrize(
    "item, words",
    [
        ("task.range_index=7.5", "task.range_index must be a int"),
        ("eval_every=ten", "eval_every must be a int"),
        ("train.lr=fast", "train.lr must be a float"),
        ("model.single_unit=maybe", "model.single_unit must be true or false"),
        ("train.lrr=1", "train.lrr is not a config field"),
        ("trian.lr=1", "trian is not a config section"),
        ("seed_block", "an override must be field=value"),
    ],
)
def test_bad_overrides_name_the_field(item, words):
    c = load_config("single_module", "op=mul,model=nmu")
    with pytest.raises(ConfigError, match=words):
        apply_overrides(c, [item])


def test_parse_value_keeps_text_for_untyped_fields():
    assert parse_value("f", "abc", object) == "abc"
    assert parse_value("f", "[1, 2]", tuple) == (1, 2)
    assert parse_value("f", "True", bool) is True
