"""The kinds of topic the embedded sample draws, as data types; the topics themselves are data modules of
their own (``process_topics``, ``molecule_topics``, ``circuit_topics``, ``law_topics``, ``reaction_topics``).

Every topic carries one fact sentence per scientific track it does not show by its drawing alone (a
molecule drawing shows an entity, so a molecule topic states a process fact and a law fact). Each
sentence uses the vocabulary of its own track and none of the others' (``sciir.sample.tracks``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ProcessTopic:
    """A workflow drawn as boxes joined by arrows; ``edges`` index into ``steps``."""

    title: str
    steps: tuple[str, ...]
    edges: tuple[tuple[int, int], ...]
    facts: Mapping[str, str]


@dataclass(frozen=True)
class MoleculeTopic:
    """A molecule drawn from its SMILES, titled by its name."""

    title: str
    smiles: str
    facts: Mapping[str, str]


@dataclass(frozen=True)
class CircuitTopic:
    """A series loop: a source followed by components, each as (element kind, drawn label); ``equation``
    is the law a circuit_law panel writes beside it."""

    title: str
    source_label: str
    components: tuple[tuple[str, str], ...]
    facts: Mapping[str, str]
    equation: str


@dataclass(frozen=True)
class LawTopic:
    """A physical law plotted as y = curve(x, coefficient) over (0, x_max]."""

    title: str
    law_name: str
    equation: str
    x_label: str
    y_label: str
    curve: str
    coefficients: tuple[float, ...]
    x_max: float
    subject: str
    facts: Mapping[str, str]
    # The stages of the measurement, in order, which a staged_plot panel draws as boxes joined by arrows.
    stages: tuple[str, ...]


@dataclass(frozen=True)
class ReactionTopic:
    """One reaction step: a reactant molecule leads to a product, each drawn from SMILES and named;
    ``rate_law`` is what a rate_reaction panel writes below the scheme."""

    title: str
    reactant: str
    reactant_smiles: str
    product: str
    product_smiles: str
    rate_law: str
    facts: Mapping[str, str]


Topic = ProcessTopic | MoleculeTopic | CircuitTopic | LawTopic | ReactionTopic


COMPONENT_NAMES: Mapping[str, str] = {
    "source": "Voltage source",
    "resistor": "Resistor",
    "capacitor": "Capacitor",
    "inductor": "Inductor",
    "diode": "Diode",
}
