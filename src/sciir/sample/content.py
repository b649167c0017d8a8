"""The scientific content of the embedded sample, as data, and the prose built from it.

Every topic carries one fact sentence per scientific track it does not show by its
drawing alone (a molecule drawing shows an entity, so a molecule topic states a process
fact and a law fact). Each sentence uses the vocabulary of its own track and none of
the others' (``TRACK_VOCABULARY``), so a text-based annotator reading a caption recovers
exactly the tracks of its figure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

TRACKS: tuple[str, ...] = ("entity", "process", "law")

# Words that mark each track in captions; matched at a word start, so plurals count.
TRACK_VOCABULARY: Mapping[str, tuple[str, ...]] = {
    "entity": ("structure", "molecule", "component", "morphology"),
    "process": ("workflow", "pathway", "steps", "stage", "leads to"),
    "law": ("law", "equation", "conservation", "proportional", "relationship"),
}

# Which tracks each panel kind shows by its drawing alone. The first four draw one track each; the
# others draw two or three in one panel (a circuit with its law written beside it, a reaction scheme
# of named molecules joined by an arrow, the same with its rate law written, a law plot above the
# stages of its measurement joined by arrows).
NATIVE_TRACKS: Mapping[str, tuple[str, ...]] = {
    "process": ("process",),
    "molecule": ("entity",),
    "circuit": ("entity",),
    "plot": ("law",),
    "circuit_law": ("entity", "law"),
    "reaction": ("entity", "process"),
    "rate_reaction": ("entity", "process", "law"),
    "staged_plot": ("process", "law"),
}

THIRD_PARTY_NOTE = "Reproduced from [12] with permission."


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


def _chain(n_steps: int) -> tuple[tuple[int, int], ...]:
    """Edges of a linear chain of ``n_steps`` boxes."""
    return tuple((i, i + 1) for i in range(n_steps - 1))


PROCESS_TOPICS: tuple[ProcessTopic, ...] = (
    ProcessTopic(
        "RNA sequencing",
        ("Sample collection", "RNA extraction", "Library preparation", "Sequencing", "Read alignment"),
        _chain(5),
        {
            "entity": "Messenger RNA molecules are the component analysed.",
            "law": "Read counts are proportional to transcript abundance.",
        },
    ),
    ProcessTopic(
        "Protein purification",
        ("Cell lysis", "Centrifugation", "Affinity capture", "Elution"),
        _chain(4),
        {
            "entity": "The target protein keeps its folded structure with a histidine tag.",
            "law": "Recovered protein is proportional to the amount loaded on the column.",
        },
    ),
    ProcessTopic(
        "Water treatment",
        ("Coagulation", "Sedimentation", "Filtration", "Disinfection"),
        _chain(4),
        {
            "entity": "Suspended clay particles are the main component removed.",
            "law": "Settling speed obeys Stokes' law, proportional to the square of particle size.",
        },
    ),
    ProcessTopic(
        "Photosynthesis",
        ("Light absorption", "Water splitting", "Oxygen release", "Electron transport", "Sugar synthesis"),
        ((0, 1), (1, 2), (1, 3), (3, 4)),
        {
            "entity": "Chlorophyll molecules in the thylakoid membrane capture light.",
            "law": "Energy conservation holds: absorbed light energy equals stored chemical energy plus heat.",
        },
    ),
    ProcessTopic(
        "DNA amplification",
        ("Denaturation", "Primer annealing", "Strand extension", "Amplified DNA"),
        _chain(4),
        {
            "entity": "The DNA double helix is the structure copied.",
            "law": "Product amount follows an exponential equation in the cycle number.",
        },
    ),
    ProcessTopic(
        "Drug discovery",
        ("Target selection", "Compound screening", "Lead optimization", "Clinical trials"),
        _chain(4),
        {
            "entity": "Each candidate is a small molecule with a defined structure.",
            "law": "Binding follows a dose response relationship given by the Hill equation.",
        },
    ),
    ProcessTopic(
        "Immune response",
        (
            "Antigen detection",
            "T cell activation",
            "B cell activation",
            "Cytokine release",
            "Antibody production",
        ),
        ((0, 1), (1, 2), (1, 3), (2, 4)),
        {
            "entity": "Antibodies are Y shaped protein molecules.",
            "law": "Antibody binding follows the law of mass action.",
        },
    ),
    ProcessTopic(
        "Cell division",
        ("Interphase", "Prophase", "Metaphase", "Anaphase", "Telophase"),
        _chain(5),
        {
            "entity": "Chromosome morphology changes visibly as the cell divides.",
            "law": "Cell number is proportional to two raised to the number of divisions.",
        },
    ),
    ProcessTopic(
        "Glucose metabolism",
        ("Glucose uptake", "Glycolysis", "Pyruvate", "Fermentation", "Citric acid cycle"),
        ((0, 1), (1, 2), (2, 3), (2, 4)),
        {
            "entity": "Glucose is a six carbon sugar molecule.",
            "law": "Mass conservation holds: six carbon atoms enter and six leave as two pyruvate.",
        },
    ),
    ProcessTopic(
        "Crystallization",
        ("Supersaturation", "Nucleation", "Crystal growth", "Harvesting"),
        _chain(4),
        {
            "entity": "Crystal morphology is set by the lattice structure.",
            "law": "Growth rate is proportional to supersaturation.",
        },
    ),
)

MOLECULE_TOPICS: tuple[MoleculeTopic, ...] = (
    MoleculeTopic(
        "Caffeine",
        "CN1C=NC2=C1C(=O)N(C(=O)N2C)C",
        {
            "process": "In the liver, demethylation leads to paraxanthine in one metabolic step.",
            "law": "Caffeine absorbance at 273 nm is proportional to concentration, the Beer Lambert law.",
        },
    ),
    MoleculeTopic(
        "Aspirin",
        "CC(=O)OC1=CC=CC=C1C(=O)O",
        {
            "process": "Acetylation of salicylic acid leads to aspirin in one synthesis step.",
            "law": "Aspirin hydrolysis follows a first order rate equation.",
        },
    ),
    MoleculeTopic(
        "Glucose",
        "OC[C@H]1OC(O)[C@H](O)[C@@H](O)[C@@H]1O",
        {
            "process": "Glycolysis breaks glucose down in ten steps to pyruvate.",
            "law": "Glucose combustion obeys energy conservation, releasing 2803 kJ per mole.",
        },
    ),
    MoleculeTopic(
        "Benzene",
        "c1ccccc1",
        {
            "process": "Catalytic reforming of naphtha leads to benzene at the final stage.",
            "law": "Benzene solubility in water follows Henry's law.",
        },
    ),
    MoleculeTopic(
        "Paracetamol",
        "CC(=O)NC1=CC=C(O)C=C1",
        {
            "process": "Acetylation of aminophenol leads to paracetamol in the last synthesis step.",
            "law": "Paracetamol plasma level falls by an exponential elimination equation.",
        },
    ),
    MoleculeTopic(
        "Ibuprofen",
        "CC(C)CC1=CC=C(C=C1)C(C)C(=O)O",
        {
            "process": "The Boots synthesis reaches ibuprofen in six steps.",
            "law": "Ibuprofen dissolution rate is proportional to surface area, the Noyes Whitney equation.",
        },
    ),
    MoleculeTopic(
        "Nicotine",
        "CN1CCC[C@H]1C2=CN=CC=C2",
        {
            "process": "Liver oxidation leads to cotinine, the main metabolic pathway.",
            "law": "Nicotine elimination follows a first order law with a two hour half life.",
        },
    ),
    MoleculeTopic(
        "Dopamine",
        "C1=CC(=C(C=C1CCN)O)O",
        {
            "process": "Decarboxylation of levodopa leads to dopamine in the last biosynthesis step.",
            "law": "Dopamine receptor occupancy follows the Hill equation.",
        },
    ),
    MoleculeTopic(
        "Serotonin",
        "C1=CC2=C(C=C1O)C(=CN2)CCN",
        {
            "process": "Hydroxylation of tryptophan leads to serotonin in two steps.",
            "law": "Serotonin receptor binding follows the law of mass action.",
        },
    ),
    MoleculeTopic(
        "Vanillin",
        "COC1=C(C=CC(=C1)C=O)O",
        {
            "process": "Oxidation of lignin leads to vanillin in a two stage pathway.",
            "law": "Vanillin aroma threshold follows a power law in concentration.",
        },
    ),
)

CIRCUIT_TOPICS: tuple[CircuitTopic, ...] = (
    CircuitTopic(
        "RC filter",
        "Vin",
        (("resistor", "R1"), ("capacitor", "C1")),
        {
            "process": "A voltage step leads to charging of C1 in one stage.",
            "law": "The time constant follows the equation tau = R1 C1.",
        },
        "Time constant tau = R1 C1",
    ),
    CircuitTopic(
        "Voltage divider",
        "Vin",
        (("resistor", "R1"), ("resistor", "R2")),
        {
            "process": "Applying Vin leads to current through R1 and then R2.",
            "law": "Ohm's law makes the output proportional to R2 over R1 plus R2.",
        },
        "Divider output Vout = Vin R2 / (R1 + R2)",
    ),
    CircuitTopic(
        "RL circuit",
        "Vin",
        (("resistor", "R1"), ("inductor", "L1")),
        {
            "process": "Switching on leads to a current that rises in steps toward its final value.",
            "law": "Faraday's law makes the voltage on L1 proportional to the change of current.",
        },
        "Time constant tau = L1 / R1",
    ),
    CircuitTopic(
        "Series RLC",
        "Vin",
        (("resistor", "R1"), ("inductor", "L1"), ("capacitor", "C1")),
        {
            "process": "A voltage step leads to a damped oscillation at each stage of the response.",
            "law": "Resonance follows the equation f = 1 / (2 pi sqrt(L1 C1)).",
        },
        "Resonance omega = 1 / sqrt(L1 C1)",
    ),
    CircuitTopic(
        "Diode circuit",
        "Vin",
        (("resistor", "R1"), ("diode", "D1")),
        {
            "process": "Current from Vin through R1 leads to forward conduction in D1.",
            "law": "Kirchhoff's voltage law balances the drops across R1 and D1.",
        },
        "Loop law Vin = VR1 + VD1",
    ),
    CircuitTopic(
        "LC tank",
        "Vin",
        (("inductor", "L1"), ("capacitor", "C1")),
        {
            "process": "Opening the switch leads to energy passing between L1 and C1 at each stage.",
            "law": "The tank frequency follows the equation f = 1 / (2 pi sqrt(L1 C1)).",
        },
        "Tank frequency f = 1 / (2 pi sqrt(L1 C1))",
    ),
    CircuitTopic(
        "RC ladder",
        "Vin",
        (("resistor", "R1"), ("capacitor", "C1"), ("resistor", "R2"), ("capacitor", "C2")),
        {
            "process": "A voltage step leads to charging of C1 and then of C2, one stage after the other.",
            "law": "Each section's time constant follows the equation tau = R C.",
        },
        "Time constants tau1 = R1 C1, tau2 = R2 C2",
    ),
    CircuitTopic(
        "Series resistors",
        "Vs",
        (("resistor", "R1"), ("resistor", "R2"), ("resistor", "R3")),
        {
            "process": "Applying Vs leads to one current through R1, R2 and R3 in turn.",
            "law": "The total resistance follows the equation R = R1 + R2 + R3.",
        },
        "Total resistance R = R1 + R2 + R3",
    ),
    CircuitTopic(
        "Half-wave rectifier",
        "Vac",
        (("diode", "D1"), ("capacitor", "C1"), ("resistor", "RL")),
        {
            "process": "Each positive half cycle leads to charging of C1 through D1 in one stage.",
            "law": "The ripple is inversely proportional to the product of RL and C1.",
        },
        "Ripple dV = I / (f C1)",
    ),
)

LAW_TOPICS: tuple[LawTopic, ...] = (
    LawTopic(
        "Ohmic resistor",
        "Ohm's law",
        "V = I R",
        "Current (A)",
        "Voltage (V)",
        "linear",
        (10.0, 22.0, 47.0, 100.0),
        2.0,
        "a resistor",
        {
            "entity": "The resistor is a single ohmic component.",
            "process": "Raising the current in steps leads to a higher voltage at each stage.",
        },
        ("Set current", "Measure", "Fit"),
    ),
    LawTopic(
        "Spring extension",
        "Hooke's law",
        "F = k x",
        "Extension (cm)",
        "Force (N)",
        "linear",
        (2.0, 5.0, 8.0),
        10.0,
        "a steel spring",
        {
            "entity": "The spring is a steel coil component of fixed stiffness.",
            "process": "Adding masses in steps leads to a longer spring at each stage.",
        },
        ("Load", "Measure", "Unload"),
    ),
    LawTopic(
        "Gas isotherm",
        "Boyle's law",
        "P V = constant",
        "Volume (L)",
        "Pressure (kPa)",
        "inverse",
        (100.0, 200.0, 300.0),
        10.0,
        "a trapped gas",
        {
            "entity": "The gas is made of nitrogen molecules held in a sealed piston.",
            "process": "Compressing the piston in steps leads to higher pressure at each stage.",
        },
        ("Seal", "Compress", "Read"),
    ),
    LawTopic(
        "Radioactive decay",
        "The decay law",
        "A = A0 exp(-t / tau)",
        "Time (h)",
        "Activity (%)",
        "decay",
        (2.0, 4.0, 8.0),
        20.0,
        "a radioactive source",
        {
            "entity": "The source is a sealed iodine isotope in a steel capsule component.",
            "process": "Each decay leads to a daughter nucleus, the first stage of a decay chain.",
        },
        ("Parent", "Decay", "Daughter"),
    ),
    LawTopic(
        "Capacitor discharge",
        "The discharge law",
        "V = V0 exp(-t / RC)",
        "Time (ms)",
        "Voltage (%)",
        "decay",
        (1.0, 2.0, 5.0),
        10.0,
        "a charged capacitor",
        {
            "entity": "The capacitor is a ceramic component of fixed capacitance.",
            "process": "Closing the switch leads to discharge through the resistor in one stage.",
        },
        ("Charge", "Switch", "Discharge"),
    ),
    LawTopic(
        "Absorbance calibration",
        "The Beer Lambert law",
        "A = e c l",
        "Concentration (mM)",
        "Absorbance",
        "linear",
        (0.12, 0.25, 0.4),
        4.0,
        "a dye solution",
        {
            "entity": "The dye is an aromatic molecule with a conjugated structure.",
            "process": "Diluting the stock in steps leads to a series of standards, one per stage.",
        },
        ("Stock", "Dilution", "Reading"),
    ),
    LawTopic(
        "Charge attraction",
        "Coulomb's law",
        "F = k q1 q2 / r^2",
        "Distance (cm)",
        "Force (mN)",
        "inverse_square",
        (50.0, 100.0, 200.0),
        10.0,
        "two charged spheres",
        {
            "entity": "Each sphere is a charged metal component on an insulating stand.",
            "process": "Moving the spheres apart in steps leads to a weaker force at each stage.",
        },
        ("Charge", "Separate", "Measure"),
    ),
    LawTopic(
        "Rod expansion",
        "Linear thermal expansion",
        "dL = a L0 dT",
        "Temperature rise (K)",
        "Expansion (mm)",
        "linear",
        (0.02, 0.05, 0.09),
        50.0,
        "a brass rod",
        {
            "entity": "The rod is a brass component of fixed starting length.",
            "process": "Heating the rod in steps leads to a longer rod at each stage.",
        },
        ("Heat", "Measure", "Cool"),
    ),
    LawTopic(
        "Sealed gas heating",
        "Gay-Lussac's law",
        "P / T = constant",
        "Temperature (K)",
        "Pressure (kPa)",
        "linear",
        (0.3, 0.35, 0.4),
        400.0,
        "a sealed gas",
        {
            "entity": "The gas is argon held in a rigid steel vessel component.",
            "process": "Warming the vessel in steps leads to a higher pressure at each stage.",
        },
        ("Seal", "Heat", "Read"),
    ),
    LawTopic(
        "Lamp irradiance",
        "The inverse square law",
        "E = k / r^2",
        "Distance (m)",
        "Intensity (W/m2)",
        "inverse_square",
        (50.0, 100.0, 200.0),
        5.0,
        "a point lamp",
        {
            "entity": "The lamp is a small filament component radiating in all directions.",
            "process": "Moving the sensor away in steps leads to a weaker reading at each stage.",
        },
        ("Place", "Move", "Read"),
    ),
    LawTopic(
        "Drug elimination",
        "First order elimination",
        "C = C0 exp(-k t)",
        "Time (h)",
        "Concentration (%)",
        "decay",
        (3.0, 6.0, 12.0),
        24.0,
        "a single drug dose",
        {
            "entity": "The drug is a small molecule with an amide structure.",
            "process": "Each dose leads to absorption, then elimination in a second stage.",
        },
        ("Dose", "Sample", "Assay"),
    ),
)


REACTION_TOPICS: tuple[ReactionTopic, ...] = (
    ReactionTopic(
        "Aspirin synthesis",
        "Salicylic acid",
        "OC(=O)C1=CC=CC=C1O",
        "Aspirin",
        "CC(=O)OC1=CC=CC=C1C(=O)O",
        "rate = k [Salicylic acid]",
        {"law": "The acetylation rate is proportional to the salicylic acid concentration."},
    ),
    ReactionTopic(
        "Dopamine biosynthesis",
        "Levodopa",
        "N[C@@H](CC1=CC(O)=C(O)C=C1)C(O)=O",
        "Dopamine",
        "C1=CC(=C(C=C1CCN)O)O",
        "rate = k [Levodopa]",
        {"law": "Decarboxylation follows the Michaelis Menten equation."},
    ),
    ReactionTopic(
        "Paracetamol synthesis",
        "Aminophenol",
        "NC1=CC=C(O)C=C1",
        "Paracetamol",
        "CC(=O)NC1=CC=C(O)C=C1",
        "rate = k [Aminophenol]",
        {"law": "Acetylation is first order, proportional to the aminophenol concentration."},
    ),
    ReactionTopic(
        "Nicotine oxidation",
        "Nicotine",
        "CN1CCC[C@H]1C2=CN=CC=C2",
        "Cotinine",
        "CN1C(=O)CC[C@H]1C2=CN=CC=C2",
        "rate = k [Nicotine]",
        {"law": "Oxidation in the liver follows a first order rate law."},
    ),
    ReactionTopic(
        "Serotonin biosynthesis",
        "Hydroxytryptophan",
        "NC(CC1=CNC2=C1C=C(O)C=C2)C(O)=O",
        "Serotonin",
        "C1=CC2=C(C=C1O)C(=CN2)CCN",
        "rate = k [Hydroxytryptophan]",
        {"law": "The decarboxylation rate is proportional to the enzyme concentration."},
    ),
    ReactionTopic(
        "Ethanol oxidation",
        "Ethanol",
        "CCO",
        "Acetaldehyde",
        "CC=O",
        "rate = k [Ethanol]",
        {"law": "At low dose the oxidation rate is proportional to the ethanol concentration."},
    ),
    ReactionTopic(
        "Ester hydrolysis",
        "Ethyl acetate",
        "CCOC(C)=O",
        "Acetic acid",
        "CC(=O)O",
        "rate = k [Ethyl acetate] [OH-]",
        {"law": "Saponification follows a second order rate law."},
    ),
    ReactionTopic(
        "Benzocaine synthesis",
        "Aminobenzoic acid",
        "NC1=CC=C(C=C1)C(O)=O",
        "Benzocaine",
        "CCOC(=O)C1=CC=C(N)C=C1",
        "rate = k [Aminobenzoic acid] [H+]",
        {"law": "The esterification rate is proportional to the acid catalyst concentration."},
    ),
    ReactionTopic(
        "Caffeine demethylation",
        "Caffeine",
        "CN1C=NC2=C1C(=O)N(C(=O)N2C)C",
        "Paraxanthine",
        "CN1C=NC2=C1C(=O)N(C(=O)N2)C",
        "rate = k [Caffeine]",
        {"law": "Caffeine clearance follows a first order law with a half life near five hours."},
    ),
    ReactionTopic(
        "Glucose phosphorylation",
        "Glucose",
        "OC[C@H]1OC(O)[C@H](O)[C@@H](O)[C@@H]1O",
        "Glucose 6-phosphate",
        "OC1O[C@H](COP(O)(O)=O)[C@@H](O)[C@H](O)[C@H]1O",
        "rate = Vmax [Glucose] / (Km + [Glucose])",
        {"law": "Hexokinase follows the Michaelis Menten equation."},
    ),
    ReactionTopic(
        "Histamine formation",
        "Histidine",
        "N[C@@H](CC1=CN=CN1)C(O)=O",
        "Histamine",
        "NCCC1=CN=CN1",
        "rate = k [Histidine]",
        {"law": "Decarboxylation is proportional to the histidine concentration."},
    ),
)

TOPICS_BY_KIND: Mapping[str, tuple[Topic, ...]] = {
    "process": PROCESS_TOPICS,
    "molecule": MOLECULE_TOPICS,
    "circuit": CIRCUIT_TOPICS,
    "plot": LAW_TOPICS,
    "circuit_law": CIRCUIT_TOPICS,
    "reaction": REACTION_TOPICS,
    "rate_reaction": REACTION_TOPICS,
    "staged_plot": LAW_TOPICS,
}

COMPONENT_NAMES: Mapping[str, str] = {
    "source": "Voltage source",
    "resistor": "Resistor",
    "capacitor": "Capacitor",
    "inductor": "Inductor",
    "diode": "Diode",
}


def mentions_track(text: str, track: str) -> bool:
    """Whether ``text`` uses a word of ``track``'s vocabulary (case-insensitive, at a word start)."""
    return any(
        re.search(rf"\b{re.escape(word)}", text, flags=re.IGNORECASE) for word in TRACK_VOCABULARY[track]
    )


def join_words(words: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} and {words[-1]}"


def panel_description(kind: str, topic: Topic, formula: str = "") -> str:
    """The sentence describing what a panel draws; it uses only its kind's native tracks' vocabulary."""
    if isinstance(topic, ReactionTopic):
        scheme = (
            f"Reaction scheme in one step: the {topic.reactant} molecule leads to the {topic.product} "
            "molecule."
        )
        return f"{scheme} The rate equation is written below it." if kind == "rate_reaction" else scheme
    if kind == "circuit_law" and isinstance(topic, CircuitTopic):
        labels = [topic.source_label, *(label for _, label in topic.components)]
        return (
            f"Schematic of the {topic.title} built from the components {join_words(labels)}, "
            f"with the equation {topic.equation} written below it."
        )
    if kind == "staged_plot" and isinstance(topic, LawTopic):
        return (
            f"{topic.law_name} for {topic.subject}: the equation {topic.equation}, written on the plot, "
            f"gives the relationship between {topic.y_label} and {topic.x_label}; the stages beside it "
            f"run from {in_sentence(topic.stages[0])} to {in_sentence(topic.stages[-1])}."
        )
    if isinstance(topic, ProcessTopic):
        return (
            f"Workflow for {topic.title} in {len(topic.steps)} steps starting at "
            f"{topic.steps[0]}; each stage leads to the next."
        )
    if isinstance(topic, MoleculeTopic):
        return f"Two-dimensional structure of the {topic.title} molecule ({formula})."
    if isinstance(topic, CircuitTopic):
        labels = [topic.source_label, *(label for _, label in topic.components)]
        return f"Schematic of the {topic.title} built from the components {join_words(labels)}."
    return (
        f"{topic.law_name} for {topic.subject}: the equation {topic.equation}, written on the plot, "
        f"gives the relationship between {topic.y_label} and {topic.x_label}."
    )


def in_sentence(name: str) -> str:
    """A name inside a sentence: a capitalised word is lowered ("Set current" -> "set current"), an
    acronym or a single capital letter is kept ("RNA extraction", "T cell activation")."""
    if len(name) > 1 and name[0].isupper() and name[1].islower():
        return name[0].lower() + name[1:]
    return name


def law_text(topic: LawTopic) -> str:
    """The law as a plot writes it: its equation ("V = I R"), which the caption names."""
    return topic.equation


def caption_text(descriptions: Sequence[str], facts: Sequence[str], third_party: bool) -> str:
    """A figure caption: panel descriptions (lettered when several), then track facts."""
    if len(descriptions) == 1:
        parts = list(descriptions)
    else:
        parts = [f"({chr(ord('a') + i)}) {text}" for i, text in enumerate(descriptions)]
    parts.extend(facts)
    if third_party:
        parts.append(THIRD_PARTY_NOTE)
    return " ".join(parts)


def caption_title(titles: Sequence[str]) -> str:
    """The caption's title line, naming every panel's subject."""
    return join_words(list(titles)) + "."


def introduction_text(titles: Sequence[str], licence_name: str) -> str:
    """The introduction of a sample article."""
    return (
        f"This article of the SciIR embedded sample presents {join_words(list(titles))}. "
        f"Its figures are drawn programmatically and it is released under {licence_name}."
    )


def article_title(titles: Sequence[str]) -> str:
    """An article title from the subjects of its figures."""
    return f"Figures on {join_words(list(titles))}"
