"""The pipeline layer: one Dagster-free step per stage of the crawl cycle.

Each step takes explicit inputs (settings, the partition's date and shard, what earlier days
produced) and returns typed results (Arrow tables and a frozen dataclass of counts). All SQL
lives here, named and commented per CTE. Assets in `crawl_assets.defs.assets` read their declared
inputs, call one step, write through `layout`, and return metadata; nothing here imports
Dagster.
"""
