"""recrawl_priorities[D]: when day D closes, every known URL's change rate, importance,
next-due date and expected gain, and the plan for day D + 1 within the budgets, which the
frontier of D + 1 follows (pipeline/priorities/recrawl_plan.py)."""

from dagster import AssetExecutionContext, AssetKey, MaterializeResult, MetadataValue, asset

from ...pipeline.priorities.priorities_step import recrawl_priorities as plan_recrawl
from ...pipeline.priorities.recrawl_plan import next_day
from ...pipeline.recrawl_inputs import host_budgets, priorities_inputs
from ...storage.layout import priorities_file, priority_hosts_file, write_parquet_atomic
from ..metadata_tables import counts_table, parquet_metadata
from ..partitions import daily_partitions
from ..resources import CrawlSettingsResource
from .failures import fails_with_crawl_errors


@asset(group_name="recrawl", partitions_def=daily_partitions,
       deps=[AssetKey("change_stats"), AssetKey("links"), AssetKey("dropped_urls"),
             AssetKey("near_duplicate_clusters")])
@fails_with_crawl_errors
def recrawl_priorities(context: AssetExecutionContext, crawl_settings: CrawlSettingsResource) -> MaterializeResult:
    """Freshness-optimal frequencies (Cho and Garcia-Molina 2003) within the daily and per-host
    budgets for pages held and never fetched alike, the best fetches of either kind by expected
    gain (a floor for never-fetched URLs, revisits that teach URL pools their rates), a small
    budget for trap and copying hosts, 404/410 back-off; the next day's plan with front-queue levels."""
    settings = crawl_settings.load()
    date, root = context.partition_key, settings.data_root
    inputs = priorities_inputs(root, date, settings)
    plan = plan_recrawl(inputs.change_stats, None, inputs.hosts, inputs.known_urls, next_day(date), settings,
                        urls_out=priorities_file(root, date))
    hosts = host_budgets(inputs.hosts, plan.hosts)
    write_parquet_atomic(hosts, priority_hosts_file(root, date))
    counts = plan.counts
    return MaterializeResult(metadata={
        **parquet_metadata(priorities_file(root, date)),
        "plan_for": next_day(date),
        "budget": counts.budget,
        "planned": counts.planned,
        "planned_refreshes": counts.refresh_planned,
        **_shares_of_plan(counts),
        "planned_by_kind": counts_table({"refresh": counts.refresh_planned, "discovery": counts.discovery_planned,
                                         "gone (404/410 back-off)": counts.gone_planned}, "kind", "urls",
                                        counted="URLs of the kind in the next day's plan."),
        **_passes(counts),
        "due": counts.due,
        "flagged_hosts": counts_table(_flags(hosts), "flag", "hosts", counted="Hosts with the flag."),
        "hosts_at_their_cap": counts.capped_hosts,
        "expected_freshness": round(counts.expected_freshness, 4),
        "path": MetadataValue.path(str(priorities_file(root, date))),
    })


def _shares_of_plan(counts) -> dict[str, float]:
    """refresh_share_of_plan, discovery_share_of_plan and gone_share_of_plan."""
    planned = max(counts.planned, 1)
    return {f"{kind}_share_of_plan": round(urls / planned, 4) for kind, urls in (
        ("refresh", counts.refresh_planned), ("discovery", counts.discovery_planned), ("gone", counts.gone_planned))}


def _passes(counts) -> dict[str, int]:
    """What the plan's first passes took: the listings of trusted hosts (the reserve) and the
    revisits of URLs on their pool's prior, for what they teach it (exploration)."""
    return {"listings_read_first": counts.listings_planned, "explored": counts.explored}


def _flags(hosts) -> dict[str, int]:
    flags = [f for f in hosts.column("flag").to_pylist() if f is not None]
    return {flag: flags.count(flag) for flag in sorted(set(flags))}
