<?php
/**
 * Plugin Name: Word Stats
 * Description: Word counts and reading times for posts: a shortcode, a REST route and an option.
 * Version: 1.0.0
 * License: GPL-2.0-or-later
 *
 * @package Word_Stats
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

// Classes live in src/ and are loaded by the Composer-style autoloader in vendor/.
require __DIR__ . '/vendor/autoload.php';

define( 'WORD_STATS_OPTION', 'word_stats_words_per_minute' );

/**
 * Number of words in a post's content (tags and shortcodes removed).
 *
 * @param int|WP_Post $post Post ID or object.
 * @return int
 */
function word_stats_post_words( $post ) {
	$post = get_post( $post );
	if ( ! $post ) {
		return 0;
	}
	return \Word_Stats\Counter::count( wp_strip_all_tags( strip_shortcodes( $post->post_content ) ) );
}

/**
 * Reading time in whole minutes, at the words-per-minute rate stored in the option.
 *
 * @param int|WP_Post $post Post ID or object.
 * @return int
 */
function word_stats_reading_minutes( $post ) {
	$rate = max( 1, (int) get_option( WORD_STATS_OPTION, 200 ) );
	return (int) ceil( word_stats_post_words( $post ) / $rate );
}

/**
 * [word_count] shortcode: "N words" for the current post (or the post given by id="").
 *
 * @param array $atts Shortcode attributes.
 * @return string
 */
function word_stats_shortcode( $atts ) {
	$atts  = shortcode_atts( array( 'id' => get_the_ID() ), $atts, 'word_count' );
	$words = word_stats_post_words( (int) $atts['id'] );
	return '<span class="word-count">' . esc_html( sprintf( '%d words', $words ) ) . '</span>';
}
add_shortcode( 'word_count', 'word_stats_shortcode' );

/**
 * GET /wp-json/word-stats/v1/posts/<id>: words and reading minutes of a published post.
 */
function word_stats_register_routes() {
	register_rest_route(
		'word-stats/v1',
		'/posts/(?P<id>\d+)',
		array(
			'methods'             => 'GET',
			'permission_callback' => '__return_true',
			'callback'            => function ( WP_REST_Request $request ) {
				$post = get_post( (int) $request['id'] );
				if ( ! $post || 'publish' !== $post->post_status ) {
					return new WP_Error( 'word_stats_not_found', 'No published post with this id.', array( 'status' => 404 ) );
				}
				return array(
					'id'      => $post->ID,
					'words'   => word_stats_post_words( $post ),
					'minutes' => word_stats_reading_minutes( $post ),
				);
			},
		)
	);
}
add_action( 'rest_api_init', 'word_stats_register_routes' );

/**
 * Activation: store the default reading rate.
 */
function word_stats_activate() {
	add_option( WORD_STATS_OPTION, 200 );
}
register_activation_hook( __FILE__, 'word_stats_activate' );
