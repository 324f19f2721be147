"""What each study kind puts into its report (:mod:`coapcc.reporting` builds it)."""
