"""Study-specific code that the generic pipeline does not know by name: measures that claims
files name (``"package.module:function"``, :mod:`coapcc.claims`), fits of unpublished
parameters, and figures.

- :mod:`coapcc.studies.tcp_thesis`: the Helsinki CoAP-over-TCP thesis's trace statements as
  measures, and its figures.
- :mod:`coapcc.studies.error_fit`: the fit of the error profiles' unpublished burst
  sojourns (``scripts/fit-errors``).
"""
