"""Series circuits the embedded sample draws as schematics."""

from __future__ import annotations

from sciir.sample.topics import CircuitTopic

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
