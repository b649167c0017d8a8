"""The geometric rules of paper B.1: which panel regions are kept (minimum short side, aspect range,
layout misfires), with the minimum side scaled to the resolution of the source."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from sciir.figures.panel_split import Box


class GeometryRules(BaseModel):
    """Which panel regions are kept (paper B.1): minimum short side, aspect range, layout misfires."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_side_px: int = 128
    aspect_range: tuple[float, float] = (0.33, 3.0)
    # Among two or more real panels, one covering this share of the figure is likely a whole-layout
    # misdetection (None disables the rule).
    layout_misfire_area: tuple[float, float] | None = (0.75, 0.90)


class GeometryParams(GeometryRules):
    """The geometric rules, with the minimum side scaled to the source resolution.

    ``min_side_px`` holds for a figure ``reference_width_px`` wide; a figure rendered narrower (a
    publisher's web rendition) gets a proportionally smaller minimum, never below ``min_side_floor_px``.
    None keeps ``min_side_px`` in source pixels.
    """

    reference_width_px: int | None = Field(default=None, gt=0)
    min_side_floor_px: int = Field(default=32, ge=1)

    def for_figure(self, width_px: int) -> GeometryRules:
        """The rules for a figure of this width."""
        if self.reference_width_px is None:
            return GeometryRules(
                min_side_px=self.min_side_px,
                aspect_range=self.aspect_range,
                layout_misfire_area=self.layout_misfire_area,
            )
        scaled = round(self.min_side_px * min(1.0, width_px / self.reference_width_px))
        return GeometryRules(
            min_side_px=max(self.min_side_floor_px, scaled),
            aspect_range=self.aspect_range,
            layout_misfire_area=self.layout_misfire_area,
        )


def _shape_rejection(box: Box, rules: GeometryRules) -> str | None:
    """Why a region is too small or too elongated to be a panel, or None."""
    size = f"{box.width}x{box.height} px"
    if min(box.width, box.height) < rules.min_side_px:
        return f"{size}, short side below {rules.min_side_px} px"
    aspect = box.width / box.height
    low, high = rules.aspect_range
    if not low <= aspect <= high:
        return f"{size}, aspect ratio {aspect:.2f} outside [{low}, {high}]"
    return None


def _layout_misfire(box: Box, figure_size: tuple[int, int], rules: GeometryRules) -> str | None:
    """Why a region looks like the whole layout rather than one panel, or None."""
    if rules.layout_misfire_area is None:
        return None
    share = box.width * box.height / (figure_size[0] * figure_size[1])
    low, high = rules.layout_misfire_area
    if low <= share <= high:
        return f"{box.width}x{box.height} px, covers {share:.0%} of the figure (likely a whole-layout region)"
    return None


def panel_rejections(
    boxes: list[Box], figure_size: tuple[int, int], rules: GeometryRules
) -> list[str | None]:
    """Per region, why it is rejected (None when kept).

    The area rule applies only when at least two regions pass the shape rules: a figure whose
    other regions are mere fragments (labels, legends) is a single-panel figure.
    """
    reasons = [_shape_rejection(box, rules) for box in boxes]
    if sum(reason is None for reason in reasons) < 2:
        return reasons
    return [
        reason or _layout_misfire(box, figure_size, rules) for box, reason in zip(boxes, reasons, strict=True)
    ]
