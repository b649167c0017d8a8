"""Workflows the embedded sample draws as boxes joined by arrows."""

from __future__ import annotations

from sciir.sample.topics import ProcessTopic


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
