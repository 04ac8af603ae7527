"""day_report[D]: what the day did, in numbers a data team reads (day_figures), tables by host and
status (report_step) and two charts (report_charts)."""
