-- The tables tessera's MySQL storage reads and writes. tessera does not create them; their
-- names and columns are the ones its queries use, and the version row is the storage format
-- version it checks at start. A log needs a database of its own: the names are fixed.

-- One row (id 0): the storage format version.
CREATE TABLE IF NOT EXISTS `Tessera` (
  `id`                   TINYINT UNSIGNED NOT NULL,
  `compatibilityVersion` BIGINT UNSIGNED  NOT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB;

INSERT IGNORE INTO `Tessera` (`id`, `compatibilityVersion`) VALUES (0, 1);

-- One row (id 0): the latest published checkpoint (a signed note) and when it was written
-- (Unix milliseconds), which spaces out publication across instances.
CREATE TABLE IF NOT EXISTS `Checkpoint` (
  `id`           TINYINT UNSIGNED NOT NULL,
  `note`         MEDIUMBLOB       NOT NULL,
  `published_at` BIGINT           NOT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB;

-- One row (id 0): size and root hash of the integrated tree. Sequencing locks it (SELECT ...
-- FOR UPDATE), which is what keeps instances from assigning an index twice.
CREATE TABLE IF NOT EXISTS `TreeState` (
  `id`   TINYINT UNSIGNED NOT NULL,
  `size` BIGINT UNSIGNED  NOT NULL,
  `root` TINYBLOB         NOT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB;

-- Hash tiles by level and index; a tile row grows until it holds 256 hashes.
CREATE TABLE IF NOT EXISTS `Subtree` (
  `level` TINYINT UNSIGNED NOT NULL,
  `index` BIGINT UNSIGNED  NOT NULL,
  `nodes` MEDIUMBLOB       NOT NULL,
  PRIMARY KEY (`level`, `index`)
) ENGINE=InnoDB;

-- Entry bundles by index, with the number of entries they hold.
CREATE TABLE IF NOT EXISTS `TiledLeaves` (
  `tile_index` BIGINT UNSIGNED   NOT NULL,
  `size`       SMALLINT UNSIGNED NOT NULL,
  `data`       LONGBLOB          NOT NULL,
  PRIMARY KEY (`tile_index`)
) ENGINE=InnoDB;

-- One row (id 0): anchord's, not tessera's. The latest checkpoint cosigned by the witnesses of
-- the policy, the one served; it never moves to a smaller tree.
CREATE TABLE IF NOT EXISTS `anchord_cosigned_checkpoint` (
  `id`   TINYINT UNSIGNED NOT NULL,
  `size` BIGINT UNSIGNED  NOT NULL,
  `note` MEDIUMBLOB       NOT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB;
