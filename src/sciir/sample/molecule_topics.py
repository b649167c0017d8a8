"""Molecules the embedded sample draws from their SMILES."""

from __future__ import annotations

from sciir.sample.topics import MoleculeTopic

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
